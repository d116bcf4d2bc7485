// A verbatim copy of the project's reference/ratio-vectors.json, so the repository stands alone:
// gbstats 0.8.0 on device-clustered ratio metrics (RatioStatistic; TwoSidedTTest,
// SequentialTwoSidedTTest with N* = 5000 and EffectBayesianABTest at alpha 0.05), three cases.

enum SharedRatioVectors {
    static let json = #"""
[
 {
  "case": "small_20v24",
  "alpha": 0.05,
  "sequential_tuning": 5000,
  "arms": [
   {
    "name": "control",
    "weight": 0.5,
    "D": 20,
    "sx": 6,
    "sxx": 10,
    "sn": 70,
    "snn": 280,
    "sxn": 24
   },
   {
    "name": "treatment",
    "weight": 0.5,
    "D": 24,
    "sx": 23,
    "sxx": 45,
    "sn": 102,
    "snn": 488,
    "sxn": 101
   }
  ],
  "note": "arm 0 is control; moments over devices: D, sum x, sum x^2, sum n, sum n^2, sum x*n (x = opened, n = displayed)",
  "gbstats_0_8_0": [
   {
    "arm": 1,
    "scale": "relative",
    "estimate": 1.630718954,
    "se": 1.392315811,
    "dof": 41.72758501,
    "fixed_p": 0.248152065,
    "fixed_lo": -1.179631664,
    "fixed_hi": 4.441069572,
    "seq_p": 0.9890400362,
    "seq_lo": -11.78302067,
    "seq_hi": 15.04445858,
    "ctw": 0.8792463837,
    "bayes_lo": -1.098169891,
    "bayes_hi": 4.3596078,
    "risk_ctrl": 1.713554179,
    "risk_trt": 0.08283522466,
    "srm_p": 0.5464935954,
    "var_c": 0.03412613166,
    "var_v": 0.0584052829
   },
   {
    "arm": 1,
    "scale": "absolute",
    "estimate": 0.1397759104,
    "se": 0.06434174412,
    "dof": 41.72758501,
    "fixed_p": 0.03555694796,
    "fixed_lo": 0.009903895078,
    "fixed_hi": 0.2696479256,
    "seq_p": 0.8866696226,
    "seq_lo": -0.4801002669,
    "seq_hi": 0.7596520876,
    "ctw": 0.9850871921,
    "bayes_lo": 0.01366840918,
    "bayes_hi": 0.2658834115,
    "risk_ctrl": 0.1401159278,
    "risk_trt": 0.0003400174043,
    "srm_p": 0.5464935954,
    "var_c": 0.03412613166,
    "var_v": 0.0584052829
   }
  ]
 },
 {
  "case": "unequal_20_80",
  "alpha": 0.05,
  "sequential_tuning": 5000,
  "arms": [
   {
    "name": "control",
    "weight": 0.2,
    "D": 2000,
    "sx": 1101,
    "sxx": 1947,
    "sn": 10161,
    "snn": 60037,
    "sxn": 6490
   },
   {
    "name": "treatment",
    "weight": 0.8,
    "D": 8150,
    "sx": 4285,
    "sxx": 7637,
    "sn": 40419,
    "snn": 232707,
    "sxn": 24588
   }
  ],
  "note": "arm 0 is control; moments over devices: D, sum x, sum x^2, sum n, sum n^2, sum x*n (x = opened, n = displayed)",
  "gbstats_0_8_0": [
   {
    "arm": 1,
    "scale": "relative",
    "estimate": -0.02160461806,
    "se": 0.0353091374,
    "dof": 3101.787222,
    "fixed_p": 0.540668314,
    "fixed_lo": -0.09083627075,
    "fixed_hi": 0.04762703464,
    "seq_p": 1.0,
    "seq_lo": -0.1297412102,
    "seq_hi": 0.0865319741,
    "ctw": 0.2703117344,
    "bayes_lo": -0.09080925568,
    "bayes_hi": 0.04760001957,
    "risk_ctrl": 0.005841566406,
    "risk_trt": 0.02744618446,
    "srm_p": 0.456611839,
    "var_c": 0.02413766864,
    "var_v": 0.02514130202
   },
   {
    "arm": 1,
    "scale": "absolute",
    "estimate": -0.002340978691,
    "se": 0.003892769792,
    "dof": 3101.787222,
    "fixed_p": 0.5476403059,
    "fixed_lo": -0.009973645647,
    "fixed_hi": 0.005291688265,
    "seq_p": 1.0,
    "seq_lo": -0.01426284624,
    "seq_hi": 0.009580888859,
    "ctw": 0.2737981801,
    "bayes_lo": -0.009970667284,
    "bayes_hi": 0.005288709902,
    "risk_ctrl": 0.0006551471731,
    "risk_trt": 0.002996125864,
    "srm_p": 0.456611839,
    "var_c": 0.02413766864,
    "var_v": 0.02514130202
   }
  ]
 },
 {
  "case": "three_arms",
  "alpha": 0.05,
  "sequential_tuning": 5000,
  "arms": [
   {
    "name": "control",
    "weight": 0.3333333333333333,
    "D": 410,
    "sx": 299,
    "sxx": 711,
    "sn": 2505,
    "snn": 17291,
    "sxn": 2103
   },
   {
    "name": "t1",
    "weight": 0.3333333333333333,
    "D": 395,
    "sx": 274,
    "sxx": 548,
    "sn": 2315,
    "snn": 15469,
    "sxn": 1807
   },
   {
    "name": "t2",
    "weight": 0.3333333333333333,
    "D": 402,
    "sx": 345,
    "sxx": 791,
    "sn": 2421,
    "snn": 16831,
    "sxn": 2412
   }
  ],
  "note": "arm 0 is control; moments over devices: D, sum x, sum x^2, sum n, sum n^2, sum x*n (x = opened, n = displayed)",
  "gbstats_0_8_0": [
   {
    "arm": 1,
    "scale": "relative",
    "estimate": -0.008400933277,
    "se": 0.09718147401,
    "dof": 800.7674066,
    "fixed_p": 0.9311336257,
    "fixed_lo": -0.1991614504,
    "fixed_hi": 0.1823595838,
    "seq_p": 1.0,
    "seq_lo": -0.3471180875,
    "seq_hi": 0.330316221,
    "ctw": 0.4655560077,
    "bayes_lo": -0.1988731223,
    "bayes_hi": 0.1820712557,
    "risk_ctrl": 0.03471410313,
    "risk_trt": 0.04311503641,
    "srm_p": 0.8693438302,
    "var_c": 0.02982217437,
    "var_v": 0.02489808507
   },
   {
    "arm": 1,
    "scale": "absolute",
    "estimate": -0.001002746128,
    "se": 0.01165204434,
    "dof": 800.7674066,
    "fixed_p": 0.9314421989,
    "fixed_lo": -0.02387490389,
    "fixed_hi": 0.02186941163,
    "seq_p": 1.0,
    "seq_lo": -0.04161488277,
    "seq_hi": 0.03960939052,
    "ctw": 0.4657103432,
    "bayes_lo": -0.02384033339,
    "bayes_hi": 0.02183484113,
    "risk_ctrl": 0.004164322596,
    "risk_trt": 0.005167068724,
    "srm_p": 0.8693438302,
    "var_c": 0.02982217437,
    "var_v": 0.02489808507
   },
   {
    "arm": 2,
    "scale": "relative",
    "estimate": 0.193880469,
    "se": 0.1123542651,
    "dof": 809.1216022,
    "fixed_p": 0.08479807371,
    "fixed_lo": -0.02665974165,
    "fixed_hi": 0.4144206796,
    "seq_p": 0.6541882783,
    "seq_lo": -0.1971178228,
    "seq_hi": 0.5848787607,
    "ctw": 0.9577918618,
    "bayes_lo": -0.0263298442,
    "bayes_hi": 0.4140907821,
    "risk_ctrl": 0.1958103284,
    "risk_trt": 0.00192985941,
    "srm_p": 0.8693438302,
    "var_c": 0.02982217437,
    "var_v": 0.03062132025
   },
   {
    "arm": 2,
    "scale": "absolute",
    "estimate": 0.02314182045,
    "se": 0.01220284594,
    "dof": 809.1216022,
    "fixed_p": 0.05825941499,
    "fixed_lo": -0.0008111484158,
    "fixed_hi": 0.04709478931,
    "seq_p": 0.5496083162,
    "seq_lo": -0.01932467526,
    "seq_hi": 0.06560831616,
    "ctw": 0.9710482732,
    "bayes_lo": -0.0007753181083,
    "bayes_hi": 0.047058959,
    "risk_ctrl": 0.02327797178,
    "risk_trt": 0.0001361513272,
    "srm_p": 0.8693438302,
    "var_c": 0.02982217437,
    "var_v": 0.03062132025
   }
  ]
 }
]
"""#
}
