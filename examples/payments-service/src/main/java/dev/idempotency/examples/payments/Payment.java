package dev.idempotency.examples.payments;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A payment, written with JPA. */
@Entity
@Table(name = "payments")
public class Payment {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    private Long id;
    @Column(name = "tenant_id", nullable = false)
    private String tenantId;
    @Column(name = "request_key", nullable = false)
    private String requestKey;
    @Column(nullable = false)
    private String payer;
    @Column(nullable = false)
    private long amount;
    @Column(nullable = false)
    private String currency;

    protected Payment() {
    }

    Payment(String tenantId, String requestKey, String payer, long amount, String currency) {
        this.tenantId = tenantId;
        this.requestKey = requestKey;
        this.payer = payer;
        this.amount = amount;
        this.currency = currency;
    }

    public Long getId() {
        return id;
    }

    public String getPayer() {
        return payer;
    }

    public long getAmount() {
        return amount;
    }

    public String getCurrency() {
        return currency;
    }
}
