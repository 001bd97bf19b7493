"""The reference's statistics and benchmark verdict, for cross-checking the
Go builder's emulation of Python arithmetic (ints versus floats, exact
means, correctly rounded stdev, round(x, 3), format specs).

Follows the avir-protocol package's Benchmark.calculate_statistics and
BenchmarkVerdict.to_dict as the project brief records them.

stdin: a JSON list of {values, target, tolerance, lower_is_better,
outlier_policy, id, unit}. stdout: a JSON list of verdict items.
"""
import json
import statistics
import sys


def calculate_statistics(values, outlier_policy):
    n = len(values)
    filtered = values
    if outlier_policy == 'iqr' and n >= 4:
        s = sorted(values)
        q1, q3 = s[n // 4], s[3 * n // 4]
        iqr = q3 - q1
        lower, upper = q1 - 1.5 * iqr, q3 + 1.5 * iqr
        filtered = [v for v in values if lower <= v <= upper] or values
    s = sorted(filtered)
    m = len(filtered)
    return {
        'mean': statistics.mean(filtered),
        'std_dev': statistics.stdev(filtered) if m > 1 else 0,
        'min': min(filtered),
        'max': max(filtered),
        'median': statistics.median(filtered),
        'p95': s[int(m * 0.95)] if m > 1 else s[0],
        'p99': s[int(m * 0.99)] if m > 1 else s[0],
        'count': m,
        'outliers_removed': n - m,
    }


def verdict(case):
    st = calculate_statistics(case['values'], case['outlier_policy'])
    target, tolerance, mean = case['target'], case['tolerance'], st['mean']
    if case['lower_is_better']:
        threshold = target * (1 + tolerance)
        passed, op = mean <= threshold, '<='
    else:
        threshold = target * (1 - tolerance)
        passed, op = mean >= threshold, '>='
    rounded = {k: (v if k in ('count', 'outliers_removed') else round(v, 3)) for k, v in st.items()}
    return {
        'benchmark_id': case['id'],
        'verdict': 'PASS' if passed else 'FAIL',
        'target': target,
        'result': round(mean, 3),
        'threshold': round(threshold, 3),
        'unit': case['unit'],
        'tolerance': tolerance,
        'statistics': rounded,
        'reason': f"Mean {mean:.2f} {op} threshold {threshold:.2f} (target: {target}, tolerance: {tolerance:.0%})",
    }


json.dump([verdict(c) for c in json.load(sys.stdin)], sys.stdout)
