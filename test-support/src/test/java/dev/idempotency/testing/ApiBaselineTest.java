package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The API check on classes compiled here from two versions of a small library: the baseline and a change to it. */
class ApiBaselineTest {
    private static final String BASELINE = """
            package lib;
            public class Api extends RuntimeException {
                public static final int LIMIT = 3;
                protected Api(String message) { super(message); }
                public String name() { return "a"; }
                public <T extends Comparable<T>> java.util.List<T> sorted(java.util.Collection<T> items, int... limits) { return null; }
                String packagePrivate() { return ""; }
                private void hidden() { }
                public interface Callback<X extends Exception> { void call() throws X; }
            }
            """;
    private static final String INTERNAL = """
            package lib.internal;
            public class Helper { public void help() { } }
            """;
    private static final String PACKAGE_PRIVATE = """
            package lib;
            class Hidden { public void help() { } }
            """;

    @TempDir
    Path dir;

    @Test
    void theBaselineOfUnchangedClassesPassesAndListsOnlyTheirPublicApi() {
        PublicApi api = compile("v1", Map.of("lib/Api.java", BASELINE, "lib/internal/Helper.java", INTERNAL,
                "lib/Hidden.java", PACKAGE_PRIVATE));

        String file = ApiBaseline.fileText("lib", api);
        assertTrue(file.startsWith("# Public API of lib"), file);
        assertEquals(List.of(), ApiBaseline.compare(file, api));
        assertEquals("""

                public class lib.Api extends java.lang.RuntimeException
                  protected <init>(java.lang.String)
                  public <T extends java.lang.Comparable<T>> java.util.List<T> sorted(java.util.Collection<T>, int...)
                  public java.lang.String name()
                  public static final int LIMIT

                public interface lib.Api$Callback<X extends java.lang.Exception>
                  public abstract void call() throws X
                """, api.text());
    }

    @Test
    void aRemovedPublicMethodFailsTheCheckNamingIt() {
        PublicApi before = compile("v1", Map.of("lib/Api.java", BASELINE));
        PublicApi after = compile("v2", Map.of("lib/Api.java",
                BASELINE.replace("public String name() { return \"a\"; }", "")));

        List<String> differences = ApiBaseline.compare(ApiBaseline.fileText("lib", before), after);

        assertEquals(List.of("- lib.Api: public java.lang.String name()"), differences);
        String message = ApiBaseline.changed("lib", differences);
        assertTrue(message.startsWith("public API of lib changed"), message);
        assertTrue(message.contains(ApiBaseline.REGENERATE) && message.contains("CHANGELOG.md"), message);
    }

    @Test
    void aChangedSignatureFailsTheCheckWithTheOldAndTheNewLine() {
        PublicApi before = compile("v1", Map.of("lib/Api.java", BASELINE));
        PublicApi after = compile("v2", Map.of("lib/Api.java",
                BASELINE.replace("public String name()", "public CharSequence name()")));

        assertEquals(List.of("- lib.Api: public java.lang.String name()", "+ lib.Api: public java.lang.CharSequence name()"),
                ApiBaseline.compare(ApiBaseline.fileText("lib", before), after));
    }

    @Test
    void aChangedSupertypeAndAnAddedTypeFailTheCheck() {
        PublicApi before = compile("v1", Map.of("lib/Api.java", BASELINE));
        PublicApi after = compile("v2", Map.of("lib/Api.java", BASELINE.replace("extends RuntimeException",
                "extends IllegalStateException"), "lib/Added.java", "package lib; public final class Added { }"));

        assertEquals(List.of("+ type added: public final class lib.Added",
                        "+ lib.Added: public <init>()",
                        "~ lib.Api was: public class lib.Api extends java.lang.RuntimeException",
                        "~ lib.Api now: public class lib.Api extends java.lang.IllegalStateException"),
                ApiBaseline.compare(ApiBaseline.fileText("lib", before), after));
    }

    @Test
    void privateAndPackagePrivateChangesAreNotApiChanges() {
        PublicApi before = compile("v1", Map.of("lib/Api.java", BASELINE, "lib/internal/Helper.java", INTERNAL));
        PublicApi after = compile("v2", Map.of("lib/Api.java", BASELINE.replace("private void hidden() { }", "")
                        .replace("String packagePrivate()", "int packagePrivate(int x)").replace("return \"\";", "return x;"),
                "lib/internal/Helper.java", INTERNAL.replace("help()", "helpMore(int times)")));

        assertEquals(List.of(), ApiBaseline.compare(ApiBaseline.fileText("lib", before), after));
    }

    /** Compiles {@code sources} (path to text) into a directory of its own and reads their API. */
    private PublicApi compile(String version, Map<String, String> sources) {
        Path src = dir.resolve(version).resolve("src");
        Path classes = dir.resolve(version).resolve("classes");
        List<String> arguments = new ArrayList<>(List.of("-d", classes.toString(), "--release", "17"));
        try {
            for (Map.Entry<String, String> source : sources.entrySet()) {
                Path file = src.resolve(source.getKey());
                Files.createDirectories(file.getParent());
                Files.writeString(file, source.getValue());
                arguments.add(file.toString());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertEquals(0, javac.run(null, null, null, arguments.toArray(String[]::new)), "javac failed");
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            return PublicApi.of(classes, loader);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

}
