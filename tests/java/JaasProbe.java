// What Kafka's own client JAAS parsing (JaasContext.loadClientContext) reads from each sasl.jaas.config value: one Base64 value per stdin line in,
// one line out per value: "OK <module> <username> <password>" (each Base64) or "ERROR". Run by
// tests/test_client_config.py with the Kafka jars on the class path (java's single-file source launch).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import javax.security.auth.login.AppConfigurationEntry;
import java.util.Map;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;

public class JaasProbe {
    private static String b64(Object value) {
        return Base64.getEncoder().encodeToString(String.valueOf(value).getBytes(StandardCharsets.UTF_8));
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String text = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
            try {
                // As a Java client reads its sasl.jaas.config (exactly one login module).
                JaasContext context = JaasContext.loadClientContext(Map.of("sasl.jaas.config", new Password(text)));
                AppConfigurationEntry entry = context.configurationEntries().get(0);
                System.out.println("OK " + b64(entry.getLoginModuleName()) + " "
                        + b64(entry.getOptions().get("username")) + " " + b64(entry.getOptions().get("password")));
            } catch (Exception e) {
                System.out.println("ERROR");
            }
        }
    }
}
