#!/usr/bin/env python3
"""Computes the gbstats 0.8.0 reference vectors of the experiment statistics and writes them as a
Swift fixture.

    pip install scipy gbstats==0.8.0 mpmath
    python3 scripts/gbstats-vectors.py          # rewrites Tests/EngageCoreTests/Fixtures/ExperimentStatisticsVectors.swift

Dev tooling only: engage never runs Python. `scripts/stats-crosscheck` imports this file and
recomputes every vector from the inputs stored in the fixture, so a fixture edited by hand fails.

What is computed, per case and treatment arm, for the absolute and relative scales:

- `ratio`: device-clustered ratio metrics from device-level moments (D, sum x, sum x^2, sum n,
  sum n^2, sum x*n), with gbstats' RatioStatistic, TwoSidedTTest, SequentialTwoSidedTTest and
  EffectBayesianABTest (improper prior), exactly as GrowthBook runs a ratio metric.
- `cuped_mean`: CUPED as gbstats 0.8.0 computes it, RegressionAdjustedStatistic of a per-device
  value y on a per-device covariate c (moments D, sum y, sum y^2, sum c, sum c^2, sum y*c), theta
  pooled over the two arms compared (compute_theta).
- `cuped_ratio`: the same regression adjustment applied to a ratio metric (gbstats 0.8.0 cannot
  adjust a ratio). Inputs are per-device rows (x, n, x', n'); each arm's adjusted mean and
  variance come from the delta-method linearisation of every device, computed here with numpy
  from those rows (not from moments), and the tests are gbstats' own, run on those statistics.
  With n = n' = 1 for every device this is RegressionAdjustedStatistic exactly (checked below).
- `cuped_analysis`: `cuped_ratio` again, but what the Swift test feeds is the experiment analysis'
  own input (per-device funnel counts of the `open` metric in each arm, and each device's
  notifications in the pre-period window), and each scale also carries the variance reduction
  1 - Var(adjusted effect) / Var(unadjusted effect), the unadjusted effect from gbstats'
  RatioStatistic on the same devices.
- `log_ratio`: the log of the ratio of means with its delta-method variance, which engage uses for
  decisions (not a gbstats scale): gbstats' tests run with the point estimate, variance and
  Welch degrees of freedom replaced by the log-scale ones.
- `bonferroni`: the fixed-horizon and sequential intervals at alpha / (treatments), as gbstats
  gives them when asked for that alpha, and the p-value that belongs to them, min(1, k p).
- `clopper_pearson`: exact binomial intervals (two-sided, and the one-sided upper bound) from
  scipy's beta quantiles.
- `risk`: the Bayesian risk (expected loss) at extreme z, where scipy's truncnorm, which gbstats
  uses, loses digits; from mpmath at 50 digits.
"""
import importlib.metadata
import json
import math
import pathlib
import random
import re
import sys

try:
    import numpy as np
    from gbstats.bayesian.tests import EffectBayesianABTest, EffectBayesianConfig
    from gbstats.frequentist.tests import (FrequentistConfig, SequentialConfig, SequentialTwoSidedTTest,
                                           TwoSidedTTest)
    from gbstats.models.statistics import RatioStatistic, RegressionAdjustedStatistic, SampleMeanStatistic
except ImportError as error:
    sys.exit(f"gbstats-vectors: {error.name} is missing (pip install scipy gbstats==0.8.0 mpmath)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "Tests/EngageCoreTests/Fixtures/ExperimentStatisticsVectors.swift"
SCALES = ("absolute", "relative")


# MARK: Arm statistics

def ratio_statistic(arm):
    d = arm["D"]
    return RatioStatistic(
        n=d,
        m_statistic=SampleMeanStatistic(n=d, sum=arm["sx"], sum_squares=arm["sxx"]),
        d_statistic=SampleMeanStatistic(n=d, sum=arm["sn"], sum_squares=arm["snn"]),
        m_d_sum_of_products=arm["sxn"])


def regression_adjusted_statistic(arm):
    d = arm["D"]
    return RegressionAdjustedStatistic(
        n=d,
        post_statistic=SampleMeanStatistic(n=d, sum=arm["sy"], sum_squares=arm["syy"]),
        pre_statistic=SampleMeanStatistic(n=d, sum=arm["sc"], sum_squares=arm["scc"]),
        post_pre_sum_of_products=arm["syc"],
        theta=0)


class LinearisedArm:
    """An arm statistic as gbstats' tests read it (n, mean, unadjusted_mean, variance), for a
    regression-adjusted ratio computed from per-device rows."""

    def __init__(self, n, mean, unadjusted_mean, variance):
        self.n = n
        self.mean = mean
        self.unadjusted_mean = unadjusted_mean
        self.variance = variance

    @property
    def _has_zero_variance(self):
        return self.variance <= 0.0

    @property
    def stddev(self):
        return 0 if self.variance <= 0 else math.sqrt(self.variance)


def rows_array(arm, covariate):
    """Per-device (x, n, x', n'); a mean covariate is the device's pre-period rate (0 without
    history) over a denominator of 1."""
    rows = np.array(arm["devices"], dtype=float).reshape(-1, 4)
    if covariate == "mean":
        pre_rate = np.divide(rows[:, 2], rows[:, 3], out=np.zeros(len(rows)), where=rows[:, 3] > 0)
        rows = np.column_stack([rows[:, 0], rows[:, 1], pre_rate, np.ones(len(rows))])
    return rows


def linearised(rows):
    """Each device's influence on the post ratio and on the pre ratio (delta method)."""
    x, n, xp, npre = rows.T
    post_ratio = x.sum() / n.sum()
    pre_ratio = xp.sum() / npre.sum() if npre.sum() > 0 else 0.0
    post = (x - post_ratio * n) / n.mean()
    pre = (xp - pre_ratio * npre) / npre.mean() if npre.sum() > 0 else np.zeros(len(rows))
    return post_ratio, pre_ratio, post, pre


def regression_adjusted_ratio_pair(control, treatment, covariate):
    a, b = rows_array(control, covariate), rows_array(treatment, covariate)
    _, joint_pre_ratio, joint_post, joint_pre = linearised(np.vstack([a, b]))
    if a[:, 3].sum() == 0 or b[:, 3].sum() == 0 or np.var(joint_pre, ddof=1) == 0 or np.var(joint_post, ddof=1) == 0:
        # engage also falls back when one arm has no pre-period denominator at all
        theta = 0.0
    else:
        theta = np.cov(joint_post, joint_pre, ddof=1)[0, 1] / np.var(joint_pre, ddof=1)
    arms = []
    for rows in (a, b):
        post_ratio, pre_ratio, post, pre = linearised(rows)
        variance = float(np.var(post - theta * pre, ddof=1)) if len(rows) > 1 else 0.0
        arms.append(LinearisedArm(len(rows), post_ratio - theta * pre_ratio, post_ratio, variance))
    return arms[0], arms[1], float(theta), float(joint_pre_ratio)


# MARK: Tests

class LogRatioMixin:
    """gbstats' t tests with the log of the ratio of means as the effect. Under CUPED the
    adjusted means `m - theta m'` are put back at the metric's level first, `+ theta m'_pooled`
    (`shift`): the logarithm needs the level, which gbstats' uncentred adjusted mean lacks."""

    shift = 0.0

    @property
    def _levels(self):
        return self.stat_a.mean + self.shift, self.stat_b.mean + self.shift

    @property
    def _components(self):
        a, b = self.stat_a, self.stat_b
        level_a, level_b = self._levels
        return (a.variance / (a.n * level_a ** 2), b.variance / (b.n * level_b ** 2))

    @property
    def point_estimate(self):
        level_a, level_b = self._levels
        return math.log(level_b) - math.log(level_a)

    @property
    def variance(self):
        return sum(self._components)

    @property
    def dof(self):
        va, vb = self._components
        return (va + vb) ** 2 / (va ** 2 / (self.stat_a.n - 1) + vb ** 2 / (self.stat_b.n - 1))


def log_ratio_tests(shift):
    class LogRatioTTest(LogRatioMixin, TwoSidedTTest):
        pass

    class LogRatioSequentialTTest(LogRatioMixin, SequentialTwoSidedTTest):
        pass

    LogRatioTTest.shift = LogRatioSequentialTTest.shift = shift
    return LogRatioTTest, LogRatioSequentialTTest


def run(pair, scale, alpha, tuning, inverse, comparisons, shift=0.0):
    """Every figure of one treatment against control on one scale; `pair` makes fresh statistics
    (gbstats' tests set theta on the objects they are given)."""
    difference = "absolute" if scale == "log_ratio" else scale
    fixed_class, sequential_class = log_ratio_tests(shift) if scale == "log_ratio" \
        else (TwoSidedTTest, SequentialTwoSidedTTest)
    fixed_test = fixed_class(*pair(), FrequentistConfig(difference_type=difference, alpha=alpha))
    fixed = fixed_test.compute_result()
    sequential = sequential_class(*pair(), SequentialConfig(difference_type=difference, alpha=alpha,
                                                            sequential_tuning_parameter=tuning)).compute_result()
    out = {"scale": scale, "error": fixed.error_message}
    if fixed.error_message is None:
        out.update(estimate=fixed.expected, se=fixed.uplift.stddev, dof=float(fixed_test.dof))
    out.update(fixed_p=fixed.p_value, fixed_lo=fixed.ci[0], fixed_hi=fixed.ci[1],
               seq_p=sequential.p_value, seq_lo=sequential.ci[0], seq_hi=sequential.ci[1])
    if scale != "log_ratio":
        bayes = EffectBayesianABTest(*pair(), EffectBayesianConfig(difference_type=scale, inverse=inverse,
                                                                   alpha=alpha)).compute_result()
        out.update(bayes_error=bayes.error_message, ctw=bayes.chance_to_win, bayes_lo=bayes.ci[0],
                   bayes_hi=bayes.ci[1], risk_ctrl=bayes.risk[0], risk_trt=bayes.risk[1])
    if comparisons > 1 and fixed.error_message is None:
        corrected = alpha / comparisons
        fixed_c = fixed_class(*pair(), FrequentistConfig(difference_type=difference, alpha=corrected)).compute_result()
        seq_c = sequential_class(*pair(), SequentialConfig(difference_type=difference, alpha=corrected,
                                                           sequential_tuning_parameter=tuning)).compute_result()
        out.update(bonferroni_fixed_p=min(1.0, comparisons * fixed_c.p_value), bonferroni_fixed_lo=fixed_c.ci[0],
                   bonferroni_fixed_hi=fixed_c.ci[1], bonferroni_seq_p=min(1.0, comparisons * seq_c.p_value),
                   bonferroni_seq_lo=seq_c.ci[0], bonferroni_seq_hi=seq_c.ci[1])
    return out


def log_ratio_possible(stat_a, stat_b, shift):
    return stat_a.n > 1 and stat_b.n > 1 and stat_a.mean + shift > 0 and stat_b.mean + shift > 0 \
        and stat_a.variance > 0 and stat_b.variance > 0


def compute(kind, case):
    """The expected results of one case, from its inputs only."""
    alpha, tuning, inverse = case["alpha"], case["tuning"], case.get("inverse", False)
    arms = case["arms"]
    comparisons = len(arms) - 1 if case.get("bonferroni") else 1
    results = []
    for index in range(1, len(arms)):
        if kind == "ratio":
            def pair():
                return ratio_statistic(arms[0]), ratio_statistic(arms[index])
            theta, shift = None, 0.0
        elif kind == "cuped_mean":
            def pair():
                return regression_adjusted_statistic(arms[0]), regression_adjusted_statistic(arms[index])
            probe = TwoSidedTTest(*pair())
            theta = getattr(probe.stat_a, "theta", 0.0)
            shift = theta * (arms[0]["sc"] + arms[index]["sc"]) / (arms[0]["D"] + arms[index]["D"])
        else:
            linear = regression_adjusted_ratio_pair(arms[0], arms[index], case["covariate"])

            def pair():
                a, b, _, _ = linear
                return (LinearisedArm(a.n, a.mean, a.unadjusted_mean, a.variance),
                        LinearisedArm(b.n, b.mean, b.unadjusted_mean, b.variance))
            theta, shift = linear[2], linear[2] * linear[3]
        a, b = pair()
        if kind == "cuped_mean" and theta:
            a.theta = b.theta = theta
        entry = {"arm": index, "theta": theta, "mean_c": a.mean, "mean_v": b.mean,
                 "var_c": a.variance, "var_v": b.variance, "scales": [
                     run(pair, scale, alpha, tuning, inverse, comparisons) for scale in SCALES]}
        if log_ratio_possible(a, b, shift):
            entry["scales"].append(run(pair, "log_ratio", alpha, tuning, inverse, comparisons, shift))
        results.append(entry)
    return results


# MARK: Cases

def ratio_moments(rows):
    """Device-level moments of a ratio metric from (x, n, ...) rows."""
    return {"D": len(rows), "sx": sum(r[0] for r in rows), "sxx": sum(r[0] ** 2 for r in rows),
            "sn": sum(r[1] for r in rows), "snn": sum(r[1] ** 2 for r in rows),
            "sxn": sum(r[0] * r[1] for r in rows)}


def mean_moments(rows):
    """Moments of a per-device value y = x with the covariate c = x' (0 without history)."""
    return {"D": len(rows), "sy": sum(r[0] for r in rows), "syy": sum(r[0] ** 2 for r in rows),
            "sc": sum(r[2] for r in rows), "scc": sum(r[2] ** 2 for r in rows),
            "syc": sum(r[0] * r[2] for r in rows)}


def ratio_cases():
    def case(name, arms, alpha=0.05, tuning=5000, **extra):
        return {"name": name, "alpha": alpha, "tuning": tuning, "arms": [ratio_moments(rows) for rows in arms],
                **extra}
    strong = [device_rows(30, 2000, 1.0), device_rows(31, 2000, 1.5)]
    return [
        case("tiny_2_vs_3", [[[0, 2], [1, 3]], [[1, 2], [1, 3], [2, 4]]]),
        case("tiny_3_vs_2_large_effect", [[[0, 4], [1, 4], [0, 4]], [[3, 4], [4, 4]]]),
        case("unequal_10_90", [device_rows(21, 1000, 1.0), device_rows(22, 9000, 1.02)]),
        case("alpha_10_tuning_300", [device_rows(23, 300, 1.0), device_rows(24, 310, 1.1)], alpha=0.1, tuning=300),
        case("lower_is_better", [device_rows(25, 400, 1.0), device_rows(26, 380, 0.85)], inverse=True),
        case("three_arms_bonferroni", [device_rows(27, 500, 1.0), device_rows(28, 510, 1.12),
                                       device_rows(29, 495, 0.97)], bonferroni=True),
        case("strong_effect", strong),
        case("strong_negative_effect", strong[::-1]),
        case("one_control_device", [[[2, 5]], device_rows(32, 20, 1.0)]),
        case("no_treatment_devices", [device_rows(33, 20, 1.0), []]),
        case("zero_control_mean", [[[0, 5], [0, 3], [0, 4]], device_rows(34, 20, 1.0)]),
        case("zero_variance_treatment", [device_rows(35, 20, 1.0), [[0, 4], [0, 5], [0, 2]]]),
        case("zero_variance_constant_rate", [device_rows(36, 20, 1.0), [[1, 2], [2, 4], [1, 2], [3, 6]]]),
        case("no_displays_in_control", [[[0, 0]] * 20, device_rows(37, 20, 1.0)]),
    ]


def cuped_mean_cases():
    def case(name, arms, alpha=0.05, tuning=5000, **extra):
        return {"name": name, "alpha": alpha, "tuning": tuning, "arms": [mean_moments(rows) for rows in arms],
                **extra}
    flat = [[[x, n, 2, 5] for x, n, _, _ in device_rows(seed, 50, lift)] for seed, lift in ((40, 1.0), (41, 1.1))]
    return [
        case("correlated", [device_rows(42, 1000, 1.0), device_rows(43, 1020, 1.08)]),
        case("small", [device_rows(44, 12, 1.0), device_rows(45, 15, 1.3)]),
        case("covariate_without_variance", flat),
        case("three_arms", [device_rows(46, 800, 1.0), device_rows(47, 790, 1.1), device_rows(48, 805, 0.95)],
             bonferroni=True),
        case("one_device", [[[3, 5, 2, 4]], device_rows(49, 30, 1.0)]),
    ]


def device_rows(seed, devices, lift, history=0.8, mean_sends=5.0):
    """(x, n, x', n') per device: a persistent per-device propensity seen before and during."""
    rng = random.Random(seed)

    def poisson(mean):
        limit, k, product = math.exp(-mean), 0, rng.random()
        while product > limit:
            k += 1
            product *= rng.random()
        return k

    rows = []
    for _ in range(devices):
        propensity = rng.betavariate(2, 5)
        pre_n = poisson(mean_sends * 1.4) if rng.random() < history else 0
        pre_x = sum(rng.random() < propensity for _ in range(pre_n))
        n = poisson(mean_sends)
        x = sum(rng.random() < min(1.0, propensity * lift) for _ in range(n))
        rows.append([x, n, pre_x, pre_n])
    return rows


def cuped_ratio_cases():
    def case(name, covariate, arms, alpha=0.05, tuning=5000, **extra):
        return {"name": name, "alpha": alpha, "tuning": tuning, "covariate": covariate,
                "arms": [{"devices": rows} for rows in arms], **extra}
    return [
        case("ratio_covariate", "ratio", [device_rows(1, 60, 1.0), device_rows(2, 64, 1.15)]),
        case("mean_covariate", "mean", [device_rows(3, 60, 1.0), device_rows(4, 58, 1.15)]),
        case("ratio_covariate_three_arms", "ratio",
             [device_rows(5, 40, 1.0), device_rows(6, 42, 1.2), device_rows(7, 38, 0.9)], bonferroni=True),
        case("no_history_anywhere", "ratio", [device_rows(8, 30, 1.0, history=0), device_rows(9, 30, 1.1, history=0)]),
        case("single_device_arm", "ratio", [device_rows(10, 1, 1.0), device_rows(11, 30, 1.1)]),
    ]


def cuped_analysis_cases():
    def case(name, arms, alpha=0.05, tuning=5000):
        return {"name": name, "alpha": alpha, "tuning": tuning, "covariate": "ratio", "metric": "open",
                "arms": [{"devices": rows} for rows in arms]}
    return [
        case("analysis_two_arms", [device_rows(21, 80, 1.0), device_rows(22, 76, 1.1)]),
        case("analysis_sparse_history", [device_rows(23, 50, 1.0, history=0.3),
                                         device_rows(24, 55, 1.2, history=0.3)], alpha=0.1, tuning=400),
    ]


def with_variance_reductions(case, results):
    """Adds to each scale 1 - Var(adjusted) / Var(unadjusted), the unadjusted effect from gbstats'
    RatioStatistic over the same devices (the log ratio's from its delta method, as above)."""
    arms = [ratio_moments(arm["devices"]) for arm in case["arms"]]
    for entry in results:
        def pair():
            return ratio_statistic(arms[0]), ratio_statistic(arms[entry["arm"]])
        for scale in entry["scales"]:
            if scale.get("se") is None:
                continue
            unadjusted = run(pair, scale["scale"], case["alpha"], case["tuning"], False, 1)
            if unadjusted.get("se"):
                scale["variance_reduction"] = 1 - scale["se"] ** 2 / unadjusted["se"] ** 2
    return results


def risk_cases():
    import mpmath
    mpmath.mp.dps = 50
    out = []
    for mu, sigma in [(1.0, 0.1), (-1.0, 0.15), (3.0, 0.5), (-0.02, 0.001), (0.001, 1.0), (0.3, 0.01),
                      (-2.0, 0.05), (0.5, 0.25)]:
        m, s = mpmath.mpf(mu), mpmath.mpf(sigma)
        z = m / s
        out.append({"mu": mu, "sigma": sigma, "chance_to_win": float(mpmath.ncdf(z)),
                    "risk_ctrl": float(m * mpmath.ncdf(z) + s * mpmath.npdf(z)),
                    "risk_trt": float(s * mpmath.npdf(z) - m * mpmath.ncdf(-z))})
    return out


def clopper_pearson_cases():
    """From scipy's beta quantile (boost's ibeta_inv). scipy's binomtest(...).proportion_ci(
    method="exact") gives the same interval through a root finder that stops about 1e-10 short."""
    from scipy.stats import beta
    out = []
    for x, n in [(0, 10), (1, 10), (5, 10), (10, 10), (1, 1), (3, 200), (97, 2000), (48, 4000), (0, 4000),
                 (2000, 4000), (131, 2400)]:
        for confidence in (0.95, 0.99):
            tail = (1 - confidence) / 2
            out.append({"successes": x, "trials": n, "confidence": confidence,
                        "lower": 0.0 if x == 0 else float(beta.ppf(tail, x, n - x + 1)),
                        "upper": 1.0 if x == n else float(beta.ppf(1 - tail, x + 1, n - x)),
                        "upper_one_sided": 1.0 if x == n else float(beta.ppf(confidence, x + 1, n - x))})
    return out


def self_check():
    """With a denominator of 1 for every device, the per-device linearisation is gbstats'
    RegressionAdjustedStatistic: the two paths must agree before either is written down."""
    rows = [device_rows(12, 40, 1.0), device_rows(13, 40, 1.1)]
    unit = [[[r[0], 1, r[2], 1] for r in arm] for arm in rows]
    a, b, theta, _ = regression_adjusted_ratio_pair({"devices": unit[0]}, {"devices": unit[1]}, "ratio")
    stats = []
    for arm in unit:
        stats.append({"D": len(arm), "sy": sum(r[0] for r in arm), "syy": sum(r[0] ** 2 for r in arm),
                      "sc": sum(r[2] for r in arm), "scc": sum(r[2] ** 2 for r in arm),
                      "syc": sum(r[0] * r[2] for r in arm)})
    test = TwoSidedTTest(regression_adjusted_statistic(stats[0]), regression_adjusted_statistic(stats[1]))
    for mine, theirs in [(theta, test.stat_a.theta), (a.mean, test.stat_a.mean), (b.variance, test.stat_b.variance)]:
        assert abs(mine - theirs) <= 1e-12 * abs(theirs), (mine, theirs)


# MARK: Fixture

def build():
    self_check()
    data = {
        "generator": "scripts/gbstats-vectors.py",
        "versions": {name: importlib.metadata.version(name) for name in ("gbstats", "scipy", "numpy", "mpmath")},
        "ratio": [], "cuped_mean": [], "cuped_ratio": [], "cuped_analysis": [], "risk": risk_cases(),
        "clopper_pearson": clopper_pearson_cases(),
    }
    for kind, cases in (("ratio", ratio_cases()), ("cuped_mean", cuped_mean_cases()),
                        ("cuped_ratio", cuped_ratio_cases())):
        for case in cases:
            data[kind].append({**case, "results": compute(kind, case)})
    for case in cuped_analysis_cases():
        data["cuped_analysis"].append({**case, "results": compute_analysis(case)})
    return data


def compute_analysis(case):
    """The expected results of a `cuped_analysis` case, from its inputs only."""
    return with_variance_reductions(case, compute("cuped_ratio", case))


def swift_source(data):
    # One line per list of numbers (a device's row), so the fixture stays readable.
    body = re.sub(r"\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]",
                  lambda match: "[" + ", ".join(match.group(1).replace(",", " ").split()) + "]",
                  json.dumps(data, indent=1))
    return f"""// Generated by scripts/gbstats-vectors.py; do not edit (scripts/stats-crosscheck recomputes it).
//
// gbstats {data["versions"]["gbstats"]} runs on device-clustered ratio metrics, CUPED (regression adjustment) and the
// log-ratio scale, mpmath risks and scipy Clopper-Pearson intervals; the script's docstring says
// what each table holds.

enum ExperimentStatisticsVectors {{
    static let json = #\"\"\"
{body}
\"\"\"#
}}
"""


def main():
    FIXTURE.write_text(swift_source(build()))
    print(f"wrote {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
