import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs regular expressions through java.util.regex as a JVM JSONata engine does (Pattern.compile with no
 * flags, Matcher.find from the start): reads a stack size as its argument and, on standard input, lines
 * "P hex" (a pattern) and "S hex" (a subject), each text as hex of its UTF-16 units. For each pattern, in
 * order, and each subject, it writes one line: the matches as "start:hex-of-match" separated by spaces, or
 * "OVERFLOW" where the matcher overflowed a thread stack of that size.
 */
public final class RegexMatches {
    private static String decode(String hex) {
        StringBuilder text = new StringBuilder();
        for (int at = 0; at + 4 <= hex.length(); at += 4) {
            text.append((char) Integer.parseInt(hex.substring(at, at + 4), 16));
        }
        return text.toString();
    }

    private static String encode(CharSequence text) {
        StringBuilder hex = new StringBuilder();
        for (int at = 0; at < text.length(); at++) {
            hex.append(String.format("%04x", (int) text.charAt(at)));
        }
        return hex.toString();
    }

    private static String matches(Pattern pattern, String subject) {
        StringBuilder line = new StringBuilder();
        Matcher matcher = pattern.matcher(subject);
        while (matcher.find()) {
            line.append(matcher.start()).append(':').append(encode(matcher.group())).append(' ');
        }
        return line.toString().trim();
    }

    public static void main(String[] arguments) throws Exception {
        long stack = Long.parseLong(arguments[0]);
        BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> patterns = new ArrayList<>();
        List<String> subjects = new ArrayList<>();
        for (String line = input.readLine(); line != null; line = input.readLine()) {
            (line.startsWith("P ") ? patterns : subjects).add(decode(line.substring(2)));
        }
        StringBuilder out = new StringBuilder();
        for (String source : patterns) {
            Pattern pattern = Pattern.compile(source);
            for (String subject : subjects) {
                String[] result = new String[1];
                Thread thread = new Thread(null, () -> {
                    try {
                        result[0] = matches(pattern, subject);
                    } catch (StackOverflowError overflow) {
                        result[0] = "OVERFLOW";
                    }
                }, "match", stack);
                thread.start();
                thread.join();
                out.append(result[0]).append('\n');
            }
        }
        System.out.print(out);
    }
}
