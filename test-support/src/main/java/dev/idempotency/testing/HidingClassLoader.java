package dev.idempotency.testing;

import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The test classpath less the jars of one package prefix (e.g. {@code io.opentelemetry}), over the
 * platform class loader: code loaded through it runs as in an application without those jars. It
 * records every request for a class under the prefix (each fails, as it would there), so a test can
 * prove which of them the code asked for.
 */
public final class HidingClassLoader extends URLClassLoader {
    private final String hiddenPrefix;
    private final List<String> hiddenRequests = new ArrayList<>();

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
