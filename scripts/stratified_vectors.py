#!/usr/bin/env python3
"""Reference vectors for the stratified, ratio and device-clustered statistics (issue 16).

    python3 scripts/stratified_vectors.py          # rewrites the two generated fixtures
    python3 scripts/stats-crosscheck               # recomputes every fixture value, exits 1 on disagreement

Needs statsmodels, scipy and numpy (pip install statsmodels scipy); dev tooling only, engage
never runs Python. The cases are defined here; the values come from:

- statsmodels' StratifiedTable (Mantel-Haenszel risk ratio, CMH test, Breslow-Day test),
  confint_proportions_2indep / test_proportions_2indep / score_test_proportions_2indep (ratio
  intervals and their p-values), effectsize_2proportions + combine_effects (Cochran's Q);
- the published formulas where statsmodels has none: the Mantel-Haenszel risk difference with
  Sato's (1989) and Greenland & Robins' (1985) variances, Greenland & Robins' variance of the log
  risk ratio and its large-strata counterpart;
- for the device-clustered variances, raw per-device data expanded to one row per notification
  and statsmodels' OLS with cluster-robust covariance by device (cell dummies, no small-sample
  correction), combined with gradients taken by complex-step differentiation: nothing of the
  Swift moment algebra is reused.

Score interval bounds are found here by inverting statsmodels' own score statistic with brentq,
because confint_proportions_2indep(method="score") picks the wrong polynomial root at some edges
(0/5 against 5/5 gives [0.5, 0.5]); where its interval is regular the crosscheck compares it too.
"""
import json
import math
import pathlib
import re
import sys
import warnings

try:
    import numpy as np
    import scipy
    import statsmodels
    import statsmodels.api as sm
    from scipy import optimize, stats
    from statsmodels.stats.contingency_tables import StratifiedTable
    from statsmodels.stats.meta_analysis import combine_effects, effectsize_2proportions
    from statsmodels.stats.proportion import (confint_proportions_2indep, score_test_proportions_2indep,
                                              test_proportions_2indep)
except ImportError:
    sys.exit("stratified_vectors: statsmodels, scipy and numpy are needed (pip install statsmodels scipy)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Tests/EngageCoreTests/Fixtures"
SHARED_FIXTURE = FIXTURES / "StratifiedSharedVectors.swift"
STATSMODELS_FIXTURE = FIXTURES / "StratifiedStatsmodelsVectors.swift"
CLUSTERED_FIXTURE = FIXTURES / "ClusteredDeviceVectors.swift"
# The project's shared reference vectors beside the checkout (../shared/reference), when there.
SHARED_REFERENCES = ROOT.parent / "shared/reference"
SHARED_REFERENCE = SHARED_REFERENCES / "stratified-vectors.json"
RATIO_FIXTURE = FIXTURES / "SharedRatioVectors.swift"

# --------------------------------------------------------------------------------------------
# Cases. Each stratum: name, (variant successes, trials), (control successes, trials).

STRATIFIED_CASES = [
    ("simpson", [("chat_message", (120, 300), (1110, 3000)), ("new_photo", (900, 6000), (130, 1000)),
                 ("promo_sale", (160, 2000), (135, 1500))]),
    ("heterogeneous", [("a", (30, 100), (10, 100)), ("b", (12, 120), (25, 110)), ("c", (50, 400), (48, 390)),
                       ("d", (7, 35), (3, 40))]),
    ("homogeneous-large", [("a", (5200, 40000), (4800, 40000)), ("b", (2100, 9000), (1900, 8800)),
                           ("c", (310, 2500), (280, 2450)), ("d", (95, 700), (88, 720)), ("e", (14, 90), (11, 85))]),
    ("sparse", [("s1", (1, 3), (0, 4)), ("s2", (2, 5), (1, 2)), ("s3", (0, 2), (1, 3)), ("s4", (3, 4), (2, 6)),
                ("s5", (1, 1), (0, 1)), ("s6", (2, 7), (2, 5))]),
    ("zero-cells-and-exclusions", [("empty", (0, 0), (0, 0)), ("no_rich", (0, 0), (4, 20)), ("no_plain", (3, 9), (0, 0)),
                                   ("none", (0, 15), (0, 12)), ("all", (8, 8), (5, 5)), ("a", (9, 40), (4, 38)),
                                   ("b", (0, 25), (3, 30)), ("c", (17, 60), (11, 70))]),
    ("single-stratum", [("only", (40, 130), (7, 40))]),
    ("rare-events", [("a", (3, 20000), (1, 18000)), ("b", (12, 50000), (9, 52000)), ("c", (0, 3000), (2, 3100))]),
]

RATIO_CASES = [
    (11, 62, 1, 10), (40, 130, 7, 40), (56, 70, 48, 80), (9, 10, 3, 10), (120, 1000, 100, 1000), (5, 56, 1, 29),
    (0, 10, 9, 10), (0, 50, 3, 40), (0, 5, 5, 5), (5, 5, 1, 4), (20, 20, 3, 30), (3, 3, 4, 4), (1, 1, 1, 1),
    (30500, 1_000_000, 31234, 1_000_000), (7, 40, 40, 130), (1, 2000, 15, 1900),
]

# Device-clustered cases: strata, devices (random per seed, or one notification each).
CLUSTERED_CASES = [
    ("shared-devices", ["chat_message", "new_photo", "promo_sale"], 20260416, 60, "shared"),
    ("one-notification-per-device", ["chat_message", "new_photo", "promo_sale"], 7, 400, "single"),
    ("exclusions-and-zero-cells", ["a", "b", "zero", "no_plain"], 99, 50, "edges"),
]

CONFIDENCE = 0.95

# --------------------------------------------------------------------------------------------
# Stratified (notifications independent)


def included(strata):
    return [s for s in strata if s[1][1] > 0 and s[2][1] > 0]


def exclusion_reason(stratum):
    _, (_, n1), (_, n2) = stratum
    if n1 == 0 and n2 == 0:
        return "no_trials"
    if n1 == 0:
        return "no_variant_trials"
    if n2 == 0:
        return "no_control_trials"
    return None


def arrays(strata):
    x1 = np.array([s[1][0] for s in strata], float)
    n1 = np.array([s[1][1] for s in strata], float)
    x2 = np.array([s[2][0] for s in strata], float)
    n2 = np.array([s[2][1] for s in strata], float)
    return x1, n1, x2, n2


def stratified_table(strata):
    return StratifiedTable([np.array([[x1, n1 - x1], [x2, n2 - x2]], float) for _, (x1, n1), (x2, n2) in strata])


def mantel_haenszel_formulas(strata):
    """Published formulas: MH risk difference (Sato, Greenland-Robins variances), log risk ratio variances."""
    x1, n1, x2, n2 = arrays(strata)
    total = n1 + n2
    weight = n1 * n2 / total
    rd = ((x1 * n2 - x2 * n1) / total).sum() / weight.sum()
    sato_p = (n1 ** 2 * x2 - n2 ** 2 * x1 + n1 * n2 * (n2 - n1) / 2) / total ** 2
    sato_q = (x1 * (n2 - x2) + x2 * (n1 - x1)) / (2 * total)
    sato = (rd * sato_p.sum() + sato_q.sum()) / weight.sum() ** 2
    greenland_robins = ((x1 * (n1 - x1) * n2 ** 3 + x2 * (n2 - x2) * n1 ** 3) / (n1 * n2 * total ** 2)).sum() / weight.sum() ** 2
    r = (x1 * n2 / total).sum()
    s = (x2 * n1 / total).sum()
    log_gr = ((n1 * n2 * (x1 + x2) - x1 * x2 * total) / total ** 2).sum() / (r * s)
    p1, p2 = x1 / n1, x2 / n2
    large = (weight ** 2 * (p1 * (1 - p1) / (n1 * r * r) + p2 * (1 - p2) / (n2 * s * s))).sum()
    return {"estimate": rd, "sato_variance": sato, "greenland_robins_variance": greenland_robins}, \
           {"greenland_robins_log_variance": log_gr, "large_strata_log_variance": large}


def cmh(strata, correction):
    """statsmodels test_null_odds, except that the correction is skipped when |U| < 1/2 (R's rule)."""
    x1, n1, x2, n2 = arrays(strata)
    deviation = (x1 - n1 * (x1 + x2) / (n1 + n2)).sum()
    result = stratified_table(strata).test_null_odds(correction=correction and abs(deviation) >= 0.5)
    return float(result.statistic), float(stats.chi2.sf(result.statistic, 1))


def breslow_day(strata):
    informative = [s for s in strata if 0 < s[1][0] + s[2][0] < s[1][1] + s[2][1]]
    if len(informative) < 2:
        return None
    x1, n1, x2, n2 = arrays(strata)
    if (x1 * (n2 - x2)).sum() == 0 or ((n1 - x1) * x2).sum() == 0:
        return None
    table = stratified_table(informative)
    plain = table.test_equal_odds(adjust=False)
    tarone = table.test_equal_odds(adjust=True)
    df = len(informative) - 1
    return {"statistic": float(plain.statistic), "p_value": float(stats.chi2.sf(plain.statistic, df)),
            "tarone_statistic": float(tarone.statistic), "tarone_p_value": float(stats.chi2.sf(max(0.0, tarone.statistic), df)),
            "degrees_of_freedom": df,
            "excluded": [s[0] for s in strata if s not in informative]}


def cochran_q(strata, statistic):
    if len(strata) < 2:
        return None
    # statsmodels 0.15 adds zero_correction to the successes of every stratum once one has a zero
    # cell (but to the trials of the zero strata only), against its docstring; so the documented
    # rule, 0.5 in each cell of a stratum with a zero cell, is applied stratum by stratum here.
    effect, variance = np.zeros(len(strata)), np.zeros(len(strata))
    for i, (_, (x1, n1), (x2, n2)) in enumerate(strata):
        zero = 0.5 if x1 in (0, n1) or x2 in (0, n2) else None
        e, v = effectsize_2proportions(np.array([x1], float), np.array([n1], float), np.array([x2], float),
                                       np.array([n2], float), statistic=statistic, zero_correction=zero)
        effect[i], variance[i] = e[0], v[0]
    q = float(combine_effects(effect, variance, method_re="chi2").q)
    df = len(strata) - 1
    return {"statistic": q, "p_value": float(stats.chi2.sf(q, df)), "degrees_of_freedom": df}


def stratified_vector(name, strata):
    kept = included(strata)
    difference, ratio = mantel_haenszel_formulas(kept)
    table = stratified_table(kept)
    ratio["estimate"] = float(table.riskratio_pooled)
    cmh_plain = cmh(kept, False)
    cmh_corrected = cmh(kept, True)
    return {
        "name": name,
        "strata": [{"name": s[0], "variant": list(s[1]), "control": list(s[2])} for s in strata],
        "excluded": [{"name": s[0], "reason": exclusion_reason(s)} for s in strata if exclusion_reason(s)],
        "mh_rd": {k: float(v) for k, v in difference.items()},
        "mh_rr": {k: float(v) for k, v in ratio.items()},
        "cmh": {"statistic": cmh_plain[0], "p_value": cmh_plain[1],
                "corrected_statistic": cmh_corrected[0], "corrected_p_value": cmh_corrected[1]},
        "breslow_day": breslow_day(kept),
        "cochran_q": None if len(kept) < 2 else {"difference": cochran_q(kept, "diff"),
                                                 "ratio": cochran_q(kept, "risk-ratio")},
    }


# --------------------------------------------------------------------------------------------
# Ratio of two proportions

def score_statistic(x1, n1, x2, n2, ratio, correction):
    if x1 / n1 - ratio * x2 / n2 == 0:  # statsmodels divides 0 by 0 where the variance is 0 too
        return 0.0
    return float(score_test_proportions_2indep(x1, n1, x2, n2, value=ratio, compare="ratio",
                                               correction=correction).statistic)


def score_interval(x1, n1, x2, n2, correction):
    """Invert statsmodels' score statistic with brentq on log R."""
    critical = stats.norm.isf((1 - CONFIDENCE) / 2)
    estimate = (x1 / n1) / (x2 / n2)

    def f(t, target):
        return score_statistic(x1, n1, x2, n2, math.exp(t), correction) - target

    def root(target, start, direction):
        near, far, step = start, start, 1.0
        while (f(far, target) > 0) == (direction > 0):
            near, far, step = far, far + direction * step, step * 2
        low, high = sorted((near, far))
        return math.exp(optimize.brentq(f, low, high, args=(target,), xtol=1e-300, rtol=4 * np.finfo(float).eps))

    start = math.log(estimate) if x1 > 0 else 0.0
    if x1 > 0:
        lower = root(critical, start, -1)
        upper = root(-critical, start, +1)
    else:
        lower = 0.0
        upper = root(-critical, start, +1 if f(start, -critical) > 0 else -1)
    return lower, upper


def ratio_vector(x1, n1, x2, n2):
    vector = {"variant": [x1, n1], "control": [x2, n2], "ratio": (x1 / n1) / (x2 / n2)}
    if x1 > 0 and (x1 < n1 or x2 < n2):  # Katz's log variance is 0 when both rates are 1
        lower, upper = confint_proportions_2indep(x1, n1, x2, n2, compare="ratio", method="log", alpha=1 - CONFIDENCE)
        test = test_proportions_2indep(x1, n1, x2, n2, compare="ratio", method="log")
        vector["katz_log"] = {"lower": float(lower), "upper": float(upper), "p_value": float(test.pvalue)}
    else:
        vector["katz_log"] = None
    for key, correction in (("miettinen_nurminen_score", True), ("koopman_score", False)):
        lower, upper = score_interval(x1, n1, x2, n2, correction)
        test = test_proportions_2indep(x1, n1, x2, n2, compare="ratio", method="score", correction=correction)
        p_value = float(test.pvalue)
        if math.isnan(p_value):  # p1 == p2 == 1: statsmodels divides 0 by 0; the ratio is 1 exactly
            p_value = 1.0
        vector[key] = {"lower": lower, "upper": upper, "p_value": p_value}
    return vector


# --------------------------------------------------------------------------------------------
# Device-clustered

def simulate_devices(strata, seed, count, kind):
    """Per device a list of (stratum index, arm 0 variant / 1 control, successes, trials)."""
    rng = np.random.default_rng(seed)
    devices = []
    for _ in range(count):
        if kind == "single":
            stratum = int(rng.integers(len(strata)))
            arm = int(rng.integers(2))
            rate = [0.3, 0.15, 0.08][stratum] * (1.1 if arm == 0 else 1.0)
            devices.append([[stratum, arm, int(rng.random() < rate), 1]])
            continue
        propensity = rng.beta(2, 8)
        cells = []
        for stratum in range(len(strata)):
            for arm in range(2):
                if strata[stratum] == "no_plain" and arm == 1:
                    continue
                if rng.random() < (0.45 if kind == "shared" else 0.5):
                    trials = int(rng.integers(1, 9))
                    rate = 0.0 if strata[stratum] == "zero" and arm == 0 else min(0.95, propensity * (1.3 if arm == 0 else 1.0))
                    cells.append([stratum, arm, int(rng.binomial(trials, rate)), trials])
        if cells:
            devices.append(cells)
    return devices


def clustered_vector(name, strata, seed, count, kind):
    return clustered_values(name, strata, simulate_devices(strata, seed, count, kind))


def clustered_values(name, strata, devices):
    buckets = 2 * len(strata)
    rows, groups, outcomes = [], [], []
    for device_id, cells in enumerate(devices):
        for stratum, arm, successes, trials in cells:
            for i in range(trials):
                row = np.zeros(buckets)
                row[2 * stratum + arm] = 1
                rows.append(row)
                groups.append(device_id)
                outcomes.append(1.0 if i < successes else 0.0)
    design = np.array(rows)
    present = design.sum(0) > 0
    fit = sm.OLS(np.array(outcomes), design[:, present]).fit(
        cov_type="cluster", cov_kwds={"groups": np.array(groups), "use_correction": False})
    rates = np.zeros(buckets)
    covariance = np.zeros((buckets, buckets))
    index = np.flatnonzero(present)
    rates[index] = fit.params
    covariance[np.ix_(index, index)] = fit.cov_params()
    trials = design.sum(0)

    def binomial(b):
        return rates[b] * (1 - rates[b]) / trials[b] if trials[b] > 0 else 0.0

    def gradient(function):
        """Complex-step derivatives of function(rates) with respect to each bucket's rate."""
        grad = np.zeros(buckets)
        for b in range(buckets):
            shifted = rates.astype(complex)
            shifted[b] += 1e-30j
            grad[b] = function(shifted).imag / 1e-30
        return grad

    def variances(function):
        g = gradient(function)
        return float(g @ covariance @ g), float(sum(g[b] ** 2 * binomial(b) for b in range(buckets)))

    kept = [k for k in range(len(strata)) if trials[2 * k] > 0 and trials[2 * k + 1] > 0]
    weight = {k: trials[2 * k] * trials[2 * k + 1] / (trials[2 * k] + trials[2 * k + 1]) for k in kept}

    def mh_difference(p):
        return sum(weight[k] * (p[2 * k] - p[2 * k + 1]) for k in kept) / sum(weight.values())

    def mh_log_ratio(p):
        return np.log(sum(weight[k] * p[2 * k] for k in kept)) - np.log(sum(weight[k] * p[2 * k + 1] for k in kept))

    strata_effects = []
    for k in kept:
        difference = variances(lambda p, k=k: p[2 * k] - p[2 * k + 1])
        entry = {"stratum": strata[k], "difference_variance": difference[0], "difference_binomial_variance": difference[1]}
        if rates[2 * k] > 0 and rates[2 * k + 1] > 0:
            log_ratio = variances(lambda p, k=k: np.log(p[2 * k]) - np.log(p[2 * k + 1]))
            entry.update({"log_ratio_variance": log_ratio[0], "log_ratio_binomial_variance": log_ratio[1]})
        strata_effects.append(entry)

    def homogeneity(scale):
        usable = [k for k in kept if all(0 < rates[b] < 1 for b in (2 * k, 2 * k + 1))]
        if len(usable) < 2:
            return None
        if scale == "difference":
            functions = [lambda p, k=k: p[2 * k] - p[2 * k + 1] for k in usable]
        else:
            functions = [lambda p, k=k: np.log(p[2 * k]) - np.log(p[2 * k + 1]) for k in usable]
        effects = np.array([f(rates).real for f in functions])
        contrasts = np.array([gradient(f) for f in functions])
        v = contrasts @ covariance @ contrasts.T
        ones = np.ones(len(usable))
        solved = np.linalg.solve(v, effects)
        solved_ones = np.linalg.solve(v, ones)
        q = float(effects @ solved - (ones @ solved) ** 2 / (ones @ solved_ones))
        return {"statistic": q, "degrees_of_freedom": len(usable) - 1,
                "excluded": [strata[k] for k in kept if k not in usable]}

    rd = variances(mh_difference)
    rr = variances(mh_log_ratio)
    return {
        "name": name,
        "strata": strata,
        "devices": devices,
        "buckets": [{"stratum": strata[b // 2], "arm": "variant" if b % 2 == 0 else "control", "rate": float(rates[b]),
                     "clustered_variance": float(covariance[b, b]), "binomial_variance": float(binomial(b))}
                    for b in range(buckets) if trials[b] > 0],
        "strata_effects": strata_effects,
        "mh_rd": {"estimate": float(mh_difference(rates)), "variance": rd[0], "binomial_variance": rd[1]},
        "mh_rr": {"estimate": float(math.exp(mh_log_ratio(rates))), "log_variance": rr[0], "binomial_log_variance": rr[1]},
        "homogeneity": {"difference": homogeneity("difference"), "ratio": homogeneity("ratio")},
    }


# --------------------------------------------------------------------------------------------
# Fixture files: Swift files that hold the JSON in a raw string literal.

def versions():
    return f"statsmodels {statsmodels.__version__}, scipy {scipy.__version__}, numpy {np.__version__}"


def compact_json(value):
    """Indented JSON with each list of numbers or strings on one line."""
    text = json.dumps(value, indent=1)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


def swift_fixture(enum, comment, json_text):
    return (f"// Generated by scripts/stratified_vectors.py ({versions()}); do not edit by hand.\n"
            f"// {comment}\n"
            f"// scripts/stats-crosscheck recomputes every value.\n\n"
            f"enum {enum} {{\n    static let json = #\"\"\"\n{json_text}\n\"\"\"#\n}}\n")


def fixture_json(path):
    match = re.search(r'static let json = #"""\n(.*?)\n"""#', path.read_text(), re.S)
    if not match:
        sys.exit(f"stratified_vectors: no JSON literal in {path}")
    return json.loads(match.group(1))


def generate():
    statsmodels_vectors = {
        "confidence": CONFIDENCE,
        "stratified": [stratified_vector(name, strata) for name, strata in STRATIFIED_CASES],
        "ratio": [ratio_vector(*case) for case in RATIO_CASES],
    }
    STATSMODELS_FIXTURE.write_text(swift_fixture(
        "StratifiedStatsmodelsVectors",
        "Stratified summaries and ratio intervals: statsmodels and the published formulas.",
        compact_json(statsmodels_vectors)))
    clustered = {"confidence": CONFIDENCE, "cases": [clustered_vector(*case) for case in CLUSTERED_CASES]}
    CLUSTERED_FIXTURE.write_text(swift_fixture(
        "ClusteredDeviceVectors",
        "Device-clustered variances from raw per-device data: statsmodels OLS, cluster-robust by device.",
        json.dumps(clustered, indent=None, separators=(",", ":")).replace('{"name"', '\n{"name"')))
    print(f"wrote {STATSMODELS_FIXTURE.relative_to(ROOT)} and {CLUSTERED_FIXTURE.relative_to(ROOT)}")


# --------------------------------------------------------------------------------------------
# Crosscheck (called by scripts/stats-crosscheck with its Report)

def paired_numbers(name, expected, computed, report):
    """Pairs of numbers found at the same place in two JSON-like values; other leaves must be equal."""
    pairs = []

    def walk(a, b, where):
        if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
            for key in a:
                walk(a[key], b[key], f"{where}.{key}")
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{where}[{i}]")
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            pairs.append((float(a), float(b)))
        elif a != b:
            report.failed = True
            print(f"  {name}{where}: fixture {a!r}, recomputed {b!r}")

    walk(expected, computed, "")
    return pairs


def crosscheck(report):
    with warnings.catch_warnings():
        # statsmodels divides 0 by 0 in the degenerate cases that the vectors include on purpose.
        warnings.simplefilter("ignore", RuntimeWarning)
        compare_fixtures(report)


def compare_fixtures(report):
    shared = fixture_json(SHARED_FIXTURE)
    # The verbatim copies must still be copies; said, not passed over, where the originals are not here.
    for fixture, original in [(SHARED_FIXTURE, SHARED_REFERENCE), (RATIO_FIXTURE, SHARED_REFERENCES / "ratio-vectors.json")]:
        if not original.exists():
            print(f"  {fixture.name}: {original} not found, the copy not compared with it")
        elif json.loads(original.read_text()) != fixture_json(fixture):
            report.failed = True
            print(f"  {fixture.name} is no longer a copy of {original}")
        else:
            print(f"  {fixture.name}: a verbatim copy of {original}")
    vector = shared["stratified"]
    strata = [(s["category"], (s["rich"]["successes"], s["rich"]["displayed"]),
               (s["plain"]["successes"], s["plain"]["displayed"])) for s in vector["strata"]]
    table = stratified_table(strata)
    difference, ratio = mantel_haenszel_formulas(strata)
    z = stats.norm.isf((1 - CONFIDENCE) / 2)
    rd = vector["mantel_haenszel_risk_difference"]
    rr = vector["mantel_haenszel_risk_ratio"]
    rr_estimate = float(table.riskratio_pooled)
    rr_se = math.sqrt(ratio["greenland_robins_log_variance"])
    report.compare("shared MH RR", [(rr["estimate"], rr_estimate), (rr["statsmodels_StratifiedTable_riskratio_pooled"], rr_estimate),
                                    (rr["se_log_greenland_robins"], rr_se),
                                    (rr["ci95"][0], rr_estimate * math.exp(-z * rr_se)), (rr["ci95"][1], rr_estimate * math.exp(z * rr_se))])
    sato_se = math.sqrt(difference["sato_variance"])
    report.compare("shared MH RD", [(rd["estimate"], difference["estimate"]), (rd["se_sato"], sato_se),
                                    (rd["ci95"][0], difference["estimate"] - z * sato_se), (rd["ci95"][1], difference["estimate"] + z * sato_se)])
    null_odds = table.test_null_odds(correction=False)
    cmh_vector = vector["cmh_test_no_continuity_correction"]
    report.compare("shared CMH", [(cmh_vector["statistic"], float(null_odds.statistic)),
                                  (cmh_vector["p_value"], float(stats.chi2.sf(null_odds.statistic, 1))),
                                  (cmh_vector["statsmodels_test_null_odds_correction_False"], float(null_odds.pvalue))])
    report.compare("shared Breslow-Day", [(vector["breslow_day_homogeneity_p_statsmodels_test_equal_odds"],
                                           float(table.test_equal_odds().pvalue))])
    x1, n1, x2, n2 = arrays(strata)
    crude = vector["crude_pooled"]
    report.compare("shared crude", [(crude["rich_rate"], x1.sum() / n1.sum()), (crude["plain_rate"], x2.sum() / n2.sum()),
                                    (crude["difference"], x1.sum() / n1.sum() - x2.sum() / n2.sum())])
    pairs = []
    for interval in shared["relative_intervals"]:
        (a, b), (c, d) = interval["rich"], interval["plain"]
        pairs.append((interval["relative_lift"], (a / b) / (c / d) - 1))
        for method in ("log", "score"):
            low, upp = confint_proportions_2indep(a, b, c, d, compare="ratio", method=method)
            bounds = interval[f"statsmodels_confint_proportions_2indep_ratio_{method}_as_relative"]
            pairs += [(bounds[0], low - 1), (bounds[1], upp - 1)]
    report.compare("shared ratio CIs", pairs)

    fixture = fixture_json(STATSMODELS_FIXTURE)
    pairs = []
    for case in fixture["stratified"]:
        strata = [(s["name"], tuple(s["variant"]), tuple(s["control"])) for s in case["strata"]]
        pairs += paired_numbers(f"stratified {case['name']}", case, stratified_vector(case["name"], strata), report)
    report.compare("stratified", pairs)
    pairs, direct = [], []
    for case in fixture["ratio"]:
        (x1, n1), (x2, n2) = case["variant"], case["control"]
        pairs += paired_numbers(f"ratio {case['variant']} {case['control']}", case, ratio_vector(x1, n1, x2, n2), report)
        if 0 < x1 < n1 and 0 < x2 < n2:  # where statsmodels' own score interval picks the right roots
            low, upp = confint_proportions_2indep(x1, n1, x2, n2, compare="ratio", method="score")
            direct += [(case["miettinen_nurminen_score"]["lower"], float(low)), (case["miettinen_nurminen_score"]["upper"], float(upp))]
    report.compare("ratio", pairs)
    report.compare("ratio score confint", direct)

    clustered = fixture_json(CLUSTERED_FIXTURE)
    pairs = []
    for case in clustered["cases"]:
        pairs += paired_numbers(f"clustered {case['name']}", case, clustered_values(case["name"], case["strata"], case["devices"]), report)
    report.compare("device-clustered", pairs)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        generate()
