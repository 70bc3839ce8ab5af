package dev.idempotency.examples.payments;

import org.springframework.data.jpa.repository.JpaRepository;

/** Spring Data JPA over {@code payments}; its writes join the key's transaction. */
public interface PaymentRepository extends JpaRepository<Payment, Long> {
}
