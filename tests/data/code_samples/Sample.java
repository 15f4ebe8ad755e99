import java.util.List;

public class Sample {
    public int total(List<Integer> values) {
        int sum = 0;
        for (int v : values) sum += v;
        return sum;
    }
}
