package dev.idempotency.faults;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the callers saw, per key: how many callers there were, how many got an outcome, how many of
 * those outcomes were first runs (more than one for a key is a silent double execution), which
 * exceptions they retried, and any exception that was not one of the library's clear ones.
 */
final class Ledger {
    /** Per key, the callers' view. */
    static final class KeyRecord {
        final AtomicInteger callers = new AtomicInteger();
        final AtomicInteger outcomes = new AtomicInteger();
        final AtomicInteger firstRuns = new AtomicInteger();
        final AtomicInteger wrongResults = new AtomicInteger();
        final AtomicInteger gaveUp = new AtomicInteger();
    }

    private final Map<String, KeyRecord> keys = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> retriedBy = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> faults = new ConcurrentHashMap<>();
    private final List<String> unclear = new ArrayList<>();
    private final AtomicLong attempts = new AtomicLong();

    KeyRecord key(String key) {
        return keys.computeIfAbsent(key, k -> new KeyRecord());
    }

    Map<String, KeyRecord> keys() {
        return keys;
    }

    void attempt() {
        attempts.incrementAndGet();
    }

    long attempts() {
        return attempts.get();
    }

    void retried(String kind) {
        retriedBy.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
    }

    /** A fault injector reports each fault it caused, by kind. */
    void fault(String kind) {
        faults.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
    }

    int faults(String kind) {
        AtomicInteger n = faults.get(kind);
        return n == null ? 0 : n.get();
    }

    synchronized void unclear(String key, Throwable e) {
        StringBuilder chain = new StringBuilder(key).append(": ");
        for (Throwable t = e; t != null; t = t.getCause()) {
            chain.append(t == e ? "" : " <- ").append(t.getClass().getName()).append(": ").append(t.getMessage());
        }
        unclear.add(chain.toString());
    }

    synchronized List<String> unclear() {
        return List.copyOf(unclear);
    }

    Map<String, Integer> retriedBy() {
        Map<String, Integer> copy = new TreeMap<>();
        retriedBy.forEach((k, v) -> copy.put(k, v.get()));
        return copy;
    }

    Map<String, Integer> faults() {
        Map<String, Integer> copy = new TreeMap<>();
        faults.forEach((k, v) -> copy.put(k, v.get()));
        return copy;
    }
}
