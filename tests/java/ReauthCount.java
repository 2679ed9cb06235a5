// The SASL re-authentications (KIP-368) a running broker counted: attaches to each JVM pid given (the Attach API, the
// JVM's local management agent), sums the socket server's `successful-reauthentication-total` and
// `failed-reauthentication-total` over its listeners' network processors, and prints one line per pid:
// "<pid> <successful> <failed>". Run by tests/test_secured_cluster.py (java's single-file source launch, with
// --add-modules jdk.attach): the brokers expose these counts only over JMX.
import com.sun.tools.attach.VirtualMachine;
import javax.management.AttributeNotFoundException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class ReauthCount {
    private static long sum(MBeanServerConnection server, String attribute) throws Exception {
        long total = 0;
        int found = 0;
        for (ObjectName name : server.queryNames(new ObjectName("kafka.server:type=socket-server-metrics,*"), null)) {
            if (name.getKeyProperty("networkProcessor") == null) {
                continue;
            }
            try {
                total += Math.round(((Number) server.getAttribute(name, attribute)).doubleValue());
                found++;
            } catch (AttributeNotFoundException absent) {  // a processor's selector without SASL metrics
            }
        }
        if (found == 0) {  // a count of nothing is no count: the broker names it otherwise
            throw new IllegalStateException("no network processor shows " + attribute);
        }
        return total;
    }

    public static void main(String[] args) throws Exception {
        for (String pid : args) {
            VirtualMachine vm = VirtualMachine.attach(pid);
            JMXServiceURL agent = new JMXServiceURL(vm.startLocalManagementAgent());
            try (JMXConnector connector = JMXConnectorFactory.connect(agent)) {
                MBeanServerConnection server = connector.getMBeanServerConnection();
                System.out.println(pid + " " + sum(server, "successful-reauthentication-total") + " "
                        + sum(server, "failed-reauthentication-total"));
            } finally {
                vm.detach();
            }
        }
    }
}
