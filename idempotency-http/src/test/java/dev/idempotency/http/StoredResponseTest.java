package dev.idempotency.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.List;
import org.junit.jupiter.api.Test;

class StoredResponseTest {

    private static byte[] everyByte() {
        byte[] body = new byte[256 * 3];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i * 7);
        }
        return body;
    }

    @Test
    void theJsonFormIsStable() {
        StoredResponse response = new StoredResponse(201, "application/json",
                List.of(new HttpHeader("Location", "/payments/1"), new HttpHeader("ETag", "\"v1\"")), new byte[] {'h', 'i', 0});
        assertEquals("{\"status\":201,\"contentType\":\"application/json\",\"headers\":[{\"name\":\"Location\",\"value\":"
                + "\"/payments/1\"},{\"name\":\"ETag\",\"value\":\"\\\"v1\\\"\"}],\"body\":\"aGkA\"}", response.toJson());
    }

    @Test
    void theJsonFormRoundTripsEveryByteOfTheBody() {
        StoredResponse response = new StoredResponse(200, "application/octet-stream",
                List.of(new HttpHeader("Content-Language", "de")), everyByte());
        StoredResponse back = StoredResponse.fromJson(response.toJson());
        assertEquals(response, back);
        assertArrayEquals(everyByte(), back.body());
        assertEquals(response.toJson(), back.toJson());
    }

    @Test
    void anyJacksonMapperReadsAndWritesTheSameForm() throws Exception {
        // The executor stores results with its own mapper; the annotations fix the form for any mapper.
        StoredResponse response = new StoredResponse(402, null, List.of(), everyByte());
        JsonMapper other = JsonMapper.builder().build();
        String json = other.writeValueAsString(response);
        assertEquals(response.toJson(), json);
        assertEquals(response, other.readValue(json, StoredResponse.class));
    }

    @Test
    void anEmptyBodyAndNoContentTypeRoundTrip() {
        StoredResponse response = new StoredResponse(204, null, List.of(), new byte[0]);
        assertEquals("{\"status\":204,\"contentType\":null,\"headers\":[],\"body\":\"\"}", response.toJson());
        assertEquals(response, StoredResponse.fromJson(response.toJson()));
    }

    @Test
    void toStringShowsNoBodyOrHeaderValues() {
        StoredResponse response = new StoredResponse(200, "text/plain", List.of(new HttpHeader("Location", "/secret")),
                "card 4242".getBytes());
        assertEquals("StoredResponse[status=200, contentType=text/plain, headers=1, bodyBytes=9]", response.toString());
    }

    @Test
    void aStatusThatIsNotFinalIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new StoredResponse(101, null, List.of(), new byte[0]));
    }
}
