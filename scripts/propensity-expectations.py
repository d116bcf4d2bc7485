#!/usr/bin/env python3
"""The population rates under a device propensity, as DevicePropensityTests checks them.

    pip install mpmath   # dev tooling only
    python3 scripts/propensity-expectations.py

Sources/EngageCore/Simulation/DevicePropensity.swift moves each step of a device's funnel by a
log-odds shift s = spread * z, z standard normal, and averages over z with the trapezoidal rule.
This recomputes the same integrals with mpmath's adaptive quadrature at 30 digits, independently
of the Swift code, for the two cases the test pins (spread 1).
"""
import mpmath as mp

mp.mp.dps = 30


def logistic(x):
    return 1 / (1 + mp.e ** (-x))


def logit(p):
    return mp.log(p / (1 - p))


def device_rates(rates, s):
    expanded, actioned, opened, dismissed, replied = (mp.mpf(r) for r in rates)
    e = logistic(logit(expanded) + s)
    a = e * logistic(logit(actioned / expanded) + s)
    r = a * logistic(logit(replied / actioned) + s)
    o = logistic(logit(opened) + s)
    d = (1 - o) * dismissed / (1 - opened)
    return [e, a, o, d, r]


CASES = {
    # expanded, actioned, opened, dismissed, replied
    "new_photo plain": ("0.10", "0.04", "0.18", "0.25", "0.01"),
    # chat_message plain times its rich lift (1.2, 1.05, 1.05, 0.95, 1.1)
    "chat_message rich": ("0.36", "0.21", "0.3675", "0.1425", "0.132"),
}

for name, rates in CASES.items():
    expected = [mp.quad(lambda z: device_rates(rates, z)[i] * mp.npdf(z), [-mp.inf, -5, 0, 5, mp.inf])
                for i in range(5)]
    print(name, "expanded, actioned, opened, dismissed, replied:", [mp.nstr(x, 17) for x in expected])
