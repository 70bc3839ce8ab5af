package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The BOM (no parent, so it cannot inherit the project's version) stays in line with the build:
 * a user who imports it gets this release's artifacts, all of the published ones.
 */
class IdempotencyBomTest {
    private static final Path ROOT = Path.of("..");

    @Test
    void theBomHasTheProjectsVersionAndManagesEveryPublishedArtifact() throws Exception {
        Element parent = read(ROOT.resolve("pom.xml"));
        Element bom = read(ROOT.resolve("idempotency-bom/pom.xml"));

        assertEquals(child(parent, "version"), child(bom, "version"), "idempotency-bom's version");
        Element management = (Element) bom.getElementsByTagName("dependencyManagement").item(0);
        List<String> managed = new ArrayList<>();
        NodeList dependencies = management.getElementsByTagName("dependency");
        for (int i = 0; i < dependencies.getLength(); i++) {
            Element dependency = (Element) dependencies.item(i);
            assertEquals("${project.version}", child(dependency, "version"));
            managed.add(child(dependency, "groupId") + ":" + child(dependency, "artifactId"));
        }
        assertEquals(publishedModules(parent), managed);
    }

    /** The artifacts of the parent's modules, in its order, less the BOM and those never deployed. */
    private static List<String> publishedModules(Element parent) throws Exception {
        List<String> published = new ArrayList<>();
        NodeList modules = ((Element) parent.getElementsByTagName("modules").item(0)).getElementsByTagName("module");
        for (int i = 0; i < modules.getLength(); i++) {
            Element module = read(ROOT.resolve(modules.item(i).getTextContent().strip()).resolve("pom.xml"));
            NodeList skip = module.getElementsByTagName("maven.deploy.skip");
            String artifact = child(module, "artifactId");
            if (artifact.equals("idempotency-bom") || skip.getLength() > 0 && skip.item(0).getTextContent().strip().equals("true")) {
                continue;
            }
            published.add("dev.idempotency:" + artifact);
        }
        return published;
    }

    private static Element read(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
    }

    /** The text of {@code element}'s direct child {@code name}. */
    private static String child(Element element, String name) {
        for (Node node = element.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().strip();
            }
        }
        throw new AssertionError(element.getTagName() + " has no " + name);
    }
}
