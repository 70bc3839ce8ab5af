package dev.idempotency.examples.payments;

import dev.idempotency.core.outbox.OutboxWriter;
import dev.idempotency.spring.boot.web.IdempotentEndpoint;
import dev.idempotency.spring.boot.web.IdempotentRequest;
import java.net.URI;
import java.util.Map;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /payments}: one payment per {@code Idempotency-Key}. The JPA entity, the JdbcTemplate
 * audit row and the {@code payments.created} outbox event commit with the key and the stored
 * response, because the starter's filter runs this method inside the key's transaction.
 */
@RestController
public class PaymentsController {
    /** Payments above this amount are declined: a business outcome (402), stored and replayed. */
    static final long LIMIT = 1_000_000;

    private final PaymentRepository payments;
    private final JdbcTemplate jdbc;
    private final OutboxWriter outbox;
    private final IdempotentRequest call;
    private final String topic;

    PaymentsController(PaymentRepository payments, JdbcTemplate jdbc, OutboxWriter outbox, IdempotentRequest call,
                       @Value("${payments.topic}") String topic) {
        this.payments = payments;
        this.jdbc = jdbc;
        this.outbox = outbox;
        this.call = call;
        this.topic = topic;
    }

    /** The request body. */
    public record PaymentRequest(String payer, long amount, String currency) {
    }

    /** The response body. */
    public record PaymentResponse(long id, String payer, long amount, String currency) {
    }

    @PostMapping(path = "/payments", produces = MediaType.APPLICATION_JSON_VALUE)
    ResponseEntity<?> create(@RequestBody PaymentRequest request,
                             @RequestHeader(name = "X-Fail-After-Write", required = false) String failAfterWrite) {
        if (request.amount() > LIMIT) {
            ProblemDetail declined = ProblemDetail.forStatusAndDetail(HttpStatus.PAYMENT_REQUIRED,
                    "amount over the limit of " + LIMIT);
            declined.setTitle("Payment declined");
            return ResponseEntity.status(HttpStatus.PAYMENT_REQUIRED).contentType(MediaType.APPLICATION_PROBLEM_JSON)
                    .body(declined);
        }
        Payment payment = payments.save(new Payment(call.tenant(), call.key(), request.payer(), request.amount(),
                request.currency()));
        jdbc.update("INSERT INTO payment_audit (payment_id, note) VALUES (?, ?)", payment.getId(), "created");
        outbox.publish(topic, request.payer(), Map.of("paymentId", payment.getId(), "amount", request.amount(),
                "currency", request.currency()));
        if ("true".equals(failAfterWrite)) {
            // For the tests: a failure after every write was made; all of them must roll back.
            throw new IllegalStateException("failing after the writes, as asked");
        }
        return ResponseEntity.created(URI.create("/payments/" + payment.getId()))
                .body(new PaymentResponse(payment.getId(), request.payer(), request.amount(), request.currency()));
    }

    /** An endpoint outside {@code idempotency.http.paths} that requires a key by its annotation. */
    @IdempotentEndpoint
    @PostMapping(path = "/refunds", produces = MediaType.APPLICATION_JSON_VALUE)
    Map<String, Object> refund(@RequestBody Map<String, Object> body) {
        return Map.of("refunded", body.getOrDefault("paymentId", 0), "key", call.key());
    }
}
