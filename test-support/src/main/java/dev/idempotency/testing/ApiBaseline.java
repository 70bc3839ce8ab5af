package dev.idempotency.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A published artifact's committed API baseline, {@code api/<artifactId>.api} in its module, and the
 * check that its compiled classes still offer exactly that API ({@link PublicApi}): what Kotlin's
 * binary-compatibility-validator and .NET's PublicAPI.Shipped.txt do. Each published module runs
 * {@link #assertUnchanged} from a test of its own (its {@code PublicApiTest}), so {@code mvn verify}
 * fails on a change nobody meant; {@value #REGENERATE} rewrites every module's baseline instead.
 */
public final class ApiBaseline {
    /** System property that, set to {@code true}, makes {@link #assertUnchanged} write the baseline instead. */
    public static final String UPDATE_PROPERTY = "idempotency.api.update";
    /** The one command, run from the repository's root, that regenerates every baseline. */
    public static final String REGENERATE = "mvn -B -ntp -q test -Dtest=PublicApiTest "
            + "-Dsurefire.failIfNoSpecifiedTests=false -D" + UPDATE_PROPERTY + "=true";

    private ApiBaseline() {
    }

    /**
     * Fails, naming every difference and how to accept it, unless the classes in the module's
     * {@code target/classes} offer the API in {@code api/<artifactId>.api}; with
     * {@value #UPDATE_PROPERTY} true, writes that file from the classes instead. Runs in the module's
     * directory, as Surefire runs tests.
     */
    public static void assertUnchanged(String artifactId) {
        Path baseline = Path.of("api", artifactId + ".api");
        PublicApi now = PublicApi.of(Path.of("target", "classes"), Thread.currentThread().getContextClassLoader());
        if (Boolean.getBoolean(UPDATE_PROPERTY)) {
            write(baseline, artifactId, now);
            return;
        }
        if (!Files.isRegularFile(baseline)) {
            throw new AssertionError("public API of " + artifactId + " has no baseline " + baseline.toAbsolutePath()
                    + "; generate it with `" + REGENERATE + "` from the repository's root and commit it");
        }
        List<String> differences = compare(read(baseline), now);
        if (!differences.isEmpty()) {
            throw new AssertionError(changed(artifactId, differences));
        }
    }

    /** The differences from the baseline {@code text} to {@code now}; empty when it offers the same API. */
    static List<String> compare(String text, PublicApi now) {
        return PublicApi.parse(text).differencesTo(now);
    }

    /** The failure's message: what changed, one line each, and what to do if it was meant. */
    static String changed(String artifactId, List<String> differences) {
        return "public API of " + artifactId + " changed (- in the baseline only, + in the classes only, ~ changed):\n  "
                + String.join("\n  ", differences)
                + "\nif intended, regenerate the baselines with `" + REGENERATE + "` from the repository's root, commit "
                + "api/" + artifactId + ".api, and note the change in CHANGELOG.md (and in UPGRADING.md if users must "
                + "change their code)";
    }

    /** The baseline file's text for {@code api}: a header saying what it is and how to regenerate it, then the API. */
    static String fileText(String artifactId, PublicApi api) {
        return "# Public API of " + artifactId + ": every public type outside `internal` packages, and its public and\n"
                + "# protected members, read from the compiled classes. Checked by PublicApiTest in `mvn verify`.\n"
                + "# Do not edit: after an intended change, regenerate from the repository's root with\n"
                + "# " + REGENERATE + "\n"
                + api.text();
    }

    private static void write(Path baseline, String artifactId, PublicApi api) {
        try {
            Files.createDirectories(baseline.toAbsolutePath().getParent());
            Files.writeString(baseline, fileText(artifactId, api), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path baseline) {
        try {
            return Files.readString(baseline, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
