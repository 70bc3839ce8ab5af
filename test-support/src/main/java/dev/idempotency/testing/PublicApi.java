package dev.idempotency.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The public API of one artifact, read by reflection from its compiled classes: every public type
 * outside an {@code internal} package (nested ones too), with its supertypes and its public and
 * protected constructors, methods and fields, one line each in a stable order. Protected members of
 * final types are left out (nobody can reach them), as are synthetic and bridge members; public
 * members inherited from a non-public superclass are listed as the public type's own, since callers
 * reach them through it. {@link ApiBaseline} compares it with the committed baseline.
 */
public final class PublicApi {
    private static final int MEMBER_MODIFIERS = Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC
            | Modifier.FINAL | Modifier.ABSTRACT;

    /** Each public type's header line (its modifiers, kind, name and supertypes), by binary name. */
    private final Map<String, String> headers;
    /** Each public type's member lines, by binary name. */
    private final Map<String, SortedSet<String>> members;

    private PublicApi(Map<String, String> headers, Map<String, SortedSet<String>> members) {
        this.headers = headers;
        this.members = members;
    }

    /** The API of the classes under {@code classes} (a {@code target/classes}), loaded, uninitialised, by {@code loader}. */
    public static PublicApi of(Path classes, ClassLoader loader) {
        Map<String, String> headers = new TreeMap<>();
        Map<String, SortedSet<String>> members = new TreeMap<>();
        for (String name : classNames(classes)) {
            Class<?> type;
            try {
                type = Class.forName(name, false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException("cannot load " + name + " from " + classes + ": " + e, e);
            }
            if (!exposed(type)) {
                continue;
            }
            try {
                headers.put(name, header(type));
                members.put(name, members(type));
            } catch (LinkageError | TypeNotPresentException e) {
                throw new IllegalStateException("a signature of " + name + " names a class missing from the test "
                        + "class path: " + e, e);
            }
        }
        return new PublicApi(headers, members);
    }

    /** Parses the text {@link #text()} wrote; lines starting with {@code #} are comments. */
    static PublicApi parse(String text) {
        Map<String, String> headers = new TreeMap<>();
        Map<String, SortedSet<String>> members = new TreeMap<>();
        String current = null;
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            if (line.startsWith("  ")) {
                if (current == null) {
                    throw new IllegalArgumentException("a member line before any type: " + line);
                }
                members.get(current).add(line.strip());
            } else {
                current = typeName(line);
                headers.put(current, line);
                members.put(current, new TreeSet<>());
            }
        }
        return new PublicApi(headers, members);
    }

    /** The API as text: per type (by name), its header line, then its members indented by two spaces. */
    public String text() {
        StringBuilder text = new StringBuilder();
        for (Map.Entry<String, String> type : headers.entrySet()) {
            text.append('\n').append(type.getValue()).append('\n');
            for (String member : members.get(type.getKey())) {
                text.append("  ").append(member).append('\n');
            }
        }
        return text.toString();
    }

    /**
     * What {@code now} has that this (the baseline) has not, and the reverse: one line per removed
     * type, added type and each of its members, changed header, and removed or added member. Empty
     * when they are the same.
     */
    public List<String> differencesTo(PublicApi now) {
        List<String> differences = new ArrayList<>();
        SortedSet<String> types = new TreeSet<>(headers.keySet());
        types.addAll(now.headers.keySet());
        for (String type : types) {
            String before = headers.get(type);
            String after = now.headers.get(type);
            if (after == null) {
                differences.add("- type removed: " + before);
            } else if (before == null) {
                differences.add("+ type added: " + after);
                now.members.get(type).forEach(member -> differences.add("+ " + type + ": " + member));
            } else {
                if (!before.equals(after)) {
                    differences.add("~ " + type + " was: " + before);
                    differences.add("~ " + type + " now: " + after);
                }
                for (String member : members.get(type)) {
                    if (!now.members.get(type).contains(member)) {
                        differences.add("- " + type + ": " + member);
                    }
                }
                for (String member : now.members.get(type)) {
                    if (!members.get(type).contains(member)) {
                        differences.add("+ " + type + ": " + member);
                    }
                }
            }
        }
        return differences;
    }

    private static List<String> classNames(Path classes) {
        if (!Files.isDirectory(classes)) {
            throw new IllegalStateException(classes.toAbsolutePath() + " is not a directory: compile the module first");
        }
        try (Stream<Path> files = Files.walk(classes)) {
            return files.map(file -> classes.relativize(file).toString().replace(file.getFileSystem().getSeparator(), "/"))
                    .filter(file -> file.endsWith(".class") && !file.endsWith("module-info.class")
                            && !file.endsWith("package-info.class"))
                    .filter(file -> !Arrays.asList(file.split("/")).contains("internal"))
                    .map(file -> file.substring(0, file.length() - ".class".length()).replace('/', '.'))
                    .sorted()
                    .collect(Collectors.toList());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A type a user can name: public (or protected, nested in one a user can extend), all the way out. */
    private static boolean exposed(Class<?> type) {
        if (type.isSynthetic() || type.isAnonymousClass() || type.isLocalClass()) {
            return false;
        }
        Class<?> outer = type.getDeclaringClass();
        if (outer == null) {
            return Modifier.isPublic(type.getModifiers());
        }
        int modifiers = type.getModifiers();
        return exposed(outer) && (Modifier.isPublic(modifiers)
                || (Modifier.isProtected(modifiers) && !Modifier.isFinal(outer.getModifiers())));
    }

    private static String header(Class<?> type) {
        int modifiers = type.getModifiers() & (Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC
                | Modifier.FINAL | Modifier.ABSTRACT);
        String kind = "class";
        if (type.isAnnotation()) {
            kind = "@interface";
        } else if (type.isInterface()) {
            kind = "interface";
        } else if (type.isEnum()) {
            kind = "enum";
        } else if (type.isRecord()) {
            kind = "record";
        }
        if (type.isInterface()) {
            modifiers &= ~(Modifier.ABSTRACT | Modifier.STATIC); // implicit
        } else if (type.isEnum() || type.isRecord()) {
            modifiers &= ~(Modifier.FINAL | Modifier.STATIC); // implicit (an enum is final unless a constant has a body)
        }
        StringBuilder header = new StringBuilder(Modifier.toString(modifiers));
        if (type.isSealed()) {
            header.append(" sealed");
        }
        header.append(' ').append(kind).append(' ').append(type.getName()).append(typeParameters(type.getTypeParameters()));
        Type superclass = type.getGenericSuperclass();
        if (superclass != null && superclass != Object.class && superclass != Record.class && !type.isEnum()) {
            header.append(" extends ").append(superclass.getTypeName());
        }
        Type[] interfaces = type.isAnnotation() ? new Type[0] : type.getGenericInterfaces();
        if (interfaces.length > 0) {
            header.append(type.isInterface() ? " extends " : " implements ").append(typeNames(interfaces));
        }
        if (type.isSealed()) {
            header.append(" permits ").append(typeNames(type.getPermittedSubclasses()));
        }
        return header.toString();
    }

    private static SortedSet<String> members(Class<?> type) {
        SortedSet<String> lines = new TreeSet<>();
        boolean extendable = !Modifier.isFinal(type.getModifiers()) && !type.isEnum() && !type.isRecord();
        for (Class<?> declaring = type; declaring != null; declaring = declaring.getSuperclass()) {
            if (declaring != type && (Modifier.isPublic(declaring.getModifiers())
                    || declaring.getName().startsWith("java."))) {
                break; // a public superclass lists its own members
            }
            for (Field field : declaring.getDeclaredFields()) {
                if (visible(field, extendable)) {
                    lines.add(modifiers(field.getModifiers()) + field.getGenericType().getTypeName() + " " + field.getName());
                }
            }
            if (declaring == type) {
                for (Constructor<?> constructor : declaring.getDeclaredConstructors()) {
                    if (visible(constructor, extendable)) {
                        lines.add(executable(constructor, "", "<init>"));
                    }
                }
            }
            for (Method method : declaring.getDeclaredMethods()) {
                if (visible(method, extendable) && !method.isBridge()) {
                    String returned = method.getGenericReturnType().getTypeName() + " ";
                    lines.add((method.isDefault() ? "default " : "") + executable(method, returned, method.getName()));
                }
            }
        }
        return lines;
    }

    private static boolean visible(Member member, boolean extendable) {
        int modifiers = member.getModifiers();
        return !member.isSynthetic() && (Modifier.isPublic(modifiers) || (extendable && Modifier.isProtected(modifiers)));
    }

    private static String executable(Executable executable, String returned, String name) {
        Type[] parameters = executable.getGenericParameterTypes();
        String list = typeNames(parameters);
        if (executable.isVarArgs() && list.endsWith("[]")) {
            list = list.substring(0, list.length() - 2) + "...";
        }
        String typeParameters = typeParameters(executable.getTypeParameters());
        String line = modifiers(executable.getModifiers()) + (typeParameters.isEmpty() ? "" : typeParameters + " ")
                + returned + name + "(" + list + ")";
        Type[] thrown = executable.getGenericExceptionTypes();
        return thrown.length == 0 ? line : line + " throws " + typeNames(thrown);
    }

    private static String modifiers(int modifiers) {
        String text = Modifier.toString(modifiers & MEMBER_MODIFIERS);
        return text.isEmpty() ? "" : text + " ";
    }

    private static String typeParameters(TypeVariable<?>[] variables) {
        if (variables.length == 0) {
            return "";
        }
        List<String> rendered = new ArrayList<>();
        for (TypeVariable<?> variable : variables) {
            Type[] bounds = variable.getBounds();
            boolean unbounded = bounds.length == 1 && bounds[0] == Object.class;
            rendered.add(unbounded ? variable.getName() : variable.getName() + " extends "
                    + Arrays.stream(bounds).map(Type::getTypeName).collect(Collectors.joining(" & ")));
        }
        return "<" + String.join(", ", rendered) + ">";
    }

    private static String typeNames(Type[] types) {
        return Arrays.stream(types).map(Type::getTypeName).collect(Collectors.joining(", "));
    }

    /** The binary name in a header line: the word after its kind. */
    private static String typeName(String header) {
        String[] words = header.split(" ");
        for (int i = 0; i < words.length - 1; i++) {
            if (List.of("class", "interface", "enum", "record", "@interface").contains(words[i])) {
                String name = words[i + 1];
                int generic = name.indexOf('<');
                return generic < 0 ? name : name.substring(0, generic);
            }
        }
        throw new IllegalArgumentException("not a type's header line: " + header);
    }
}
