package dev.idempotency.testing;

import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * The test classpath less the jars of one package prefix (e.g. {@code io.opentelemetry}), over the
 * platform class loader: code loaded through it runs as in an application without those jars. It
 * records every request for a class under the prefix (each fails, as it would there), so a test can
 * prove which of them the code asked for.
 */
public final class HidingClassLoader extends URLClassLoader {
    private final String hiddenPrefix;
    private final List<String> hiddenRequests = new ArrayList<>();

    /** What {@link #run} returned: the scenario's result, and the hidden classes it asked for. */
    public record Run(String result, List<String> hiddenRequests) {
    }

    /**
     * Runs {@code scenario} (public, with a public no-argument constructor) loaded through a loader that
     * hides {@code packagePrefix}, so every class it touches comes from there. It gets the test server's
     * URL, user and password ({@link TestDatabase#get()}; {@link TestDatabase#at} rebuilds it inside), then
     * {@code arguments}.
     */
    public static Run run(String packagePrefix, Class<? extends Function<String[], String>> scenario, String... arguments)
            throws Exception {
        TestDatabase database = TestDatabase.get();
        String[] all = new String[3 + arguments.length];
        all[0] = database.url();
        all[1] = database.user();
        all[2] = database.password();
        System.arraycopy(arguments, 0, all, 3, arguments.length);
        try (HidingClassLoader loader = new HidingClassLoader(packagePrefix)) {
            @SuppressWarnings("unchecked")
            Function<String[], String> loaded = (Function<String[], String>) loader.loadClass(scenario.getName())
                    .getDeclaredConstructor().newInstance();
            String result = loaded.apply(all);
            return new Run(result, loader.hiddenRequests());
        }
    }

    /** Hides the classes under {@code packagePrefix} and the classpath entries whose path holds it as folders. */
    public HidingClassLoader(String packagePrefix) {
        super(classpathWithout(packagePrefix.replace('.', File.separatorChar)), ClassLoader.getPlatformClassLoader());
        this.hiddenPrefix = packagePrefix + ".";
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (name.startsWith(hiddenPrefix)) {
            synchronized (hiddenRequests) {
                hiddenRequests.add(name);
            }
            throw new ClassNotFoundException(name + " is hidden from this test");
        }
        return super.loadClass(name, resolve);
    }

    /** The hidden classes asked for so far, in order. */
    public List<String> hiddenRequests() {
        synchronized (hiddenRequests) {
            return List.copyOf(hiddenRequests);
        }
    }

    private static URL[] classpathWithout(String hiddenPath) {
        // Surefire runs the tests from a manifest-only jar; it names the real classpath here.
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        return Arrays.stream(classpath.split(File.pathSeparator))
                .filter(entry -> !entry.contains(File.separator + hiddenPath + File.separator))
                .map(entry -> {
                    try {
                        return new File(entry).toURI().toURL();
                    } catch (MalformedURLException e) {
                        throw new IllegalStateException(e);
                    }
                })
                .toArray(URL[]::new);
    }
}
