package dev.idempotency.examples.payments;

import java.net.URI;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * For {@link HttpCostBenchmark} only: the same payment and audit writes as {@code POST /payments} in a
 * plain {@code @Transactional}, on a path the filter does not guard, so no key and no outbox event.
 */
@RestController
class PlainPaymentsController {
    private final PaymentRepository payments;
    private final JdbcTemplate jdbc;

    PlainPaymentsController(PaymentRepository payments, JdbcTemplate jdbc) {
        this.payments = payments;
        this.jdbc = jdbc;
    }

    @Transactional
    @PostMapping(path = "/bench/plain-payments", produces = MediaType.APPLICATION_JSON_VALUE)
    ResponseEntity<PaymentsController.PaymentResponse> create(@RequestBody PaymentsController.PaymentRequest request) {
        Payment payment = payments.save(new Payment("default", "plain", request.payer(), request.amount(),
                request.currency()));
        jdbc.update("INSERT INTO payment_audit (payment_id, note) VALUES (?, ?)", payment.getId(), "created");
        return ResponseEntity.created(URI.create("/payments/" + payment.getId()))
                .body(new PaymentsController.PaymentResponse(payment.getId(), request.payer(), request.amount(),
                        request.currency()));
    }
}
