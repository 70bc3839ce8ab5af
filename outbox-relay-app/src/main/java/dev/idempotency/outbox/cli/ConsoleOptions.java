package dev.idempotency.outbox.cli;

import java.net.InetAddress;
import java.net.UnknownHostException;
import picocli.CommandLine.Option;

/**
 * The operator console's flags. Off by default; on, it is served next to {@code /health} and
 * {@code /metrics}, and refused beyond loopback unless credentials are given.
 */
final class ConsoleOptions {
    @Option(names = "--console", defaultValue = "${env:OUTBOX_CONSOLE:-false}",
            description = "Serve the operator console at /console next to /health and /metrics"
                    + " (env OUTBOX_CONSOLE; default: ${DEFAULT-VALUE}).")
    boolean enabled;

    @Option(names = "--console-read-only", defaultValue = "${env:OUTBOX_CONSOLE_READ_ONLY:-false}",
            description = "Serve the console without its actions (requeue); implies --console"
                    + " (env OUTBOX_CONSOLE_READ_ONLY; default: ${DEFAULT-VALUE}).")
    boolean readOnly;

    @Option(names = "--console-user", defaultValue = "${env:OUTBOX_CONSOLE_USER}",
            description = "User the console asks for (HTTP Basic), with --console-password; required when"
                    + " --http-host is not a loopback address (env OUTBOX_CONSOLE_USER; default: none).")
    String user;

    @Option(names = "--console-password", defaultValue = "${env:OUTBOX_CONSOLE_PASSWORD}", arity = "0..1",
            interactive = true,
            description = "That user's password (env OUTBOX_CONSOLE_PASSWORD; default: none).")
    String password;

    /** Whether the console is served at all. */
    boolean served() {
        return enabled || readOnly;
    }

    /**
     * The console's access rules for a server on {@code httpHost}; an {@link IllegalArgumentException}
     * names the flags to fix when the console would be served without the HTTP server, with half of
     * its credentials, or beyond loopback without credentials.
     */
    ConsoleAccess access(String httpHost, int httpPort) {
        if (httpPort < 0) {
            throw new IllegalArgumentException("--console needs the HTTP server, which --http-port -1 turns off");
        }
        boolean hasUser = user != null && !user.isEmpty();
        boolean hasPassword = password != null && !password.isEmpty();
        if (hasUser != hasPassword) {
            throw new IllegalArgumentException("the console needs both --console-user and --console-password"
                    + " (env OUTBOX_CONSOLE_USER, OUTBOX_CONSOLE_PASSWORD), or neither on a loopback --http-host");
        }
        if (hasUser && user.indexOf(':') >= 0) {
            throw new IllegalArgumentException("--console-user must not contain ':' (HTTP Basic separates user and password with it)");
        }
        if (!hasUser && !isLoopback(httpHost)) {
            throw new IllegalArgumentException("the console is not served on --http-host " + httpHost
                    + " (not a loopback address) without credentials: give --console-user and --console-password"
                    + " (env OUTBOX_CONSOLE_USER, OUTBOX_CONSOLE_PASSWORD), or --http-host 127.0.0.1");
        }
        return hasUser ? ConsoleAccess.withCredentials(user, password) : ConsoleAccess.loopbackOnly();
    }

    /** True when every address {@code host} names is a loopback one; an unknown name is not. */
    static boolean isLoopback(String host) {
        try {
            InetAddress[] addresses = InetAddress.getAllByName(host);
            for (InetAddress address : addresses) {
                if (!address.isLoopbackAddress()) {
                    return false;
                }
            }
            return addresses.length > 0;
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
