// A verbatim copy of the project's reference/stratified-vectors.json (statsmodels 0.15 StratifiedTable
// and the published formulas), so that the repository stands alone. scripts/stats-crosscheck
// recomputes it.

enum StratifiedSharedVectors {
    static let json = #"""
{
 "stratified": {
  "what": "rich vs plain expansion rate per displayed notification, three categories (notifications treated as independent here)",
  "strata": [
   {
    "category": "chat_message",
    "rich": {
     "successes": 120,
     "displayed": 300
    },
    "plain": {
     "successes": 1110,
     "displayed": 3000
    }
   },
   {
    "category": "new_photo",
    "rich": {
     "successes": 900,
     "displayed": 6000
    },
    "plain": {
     "successes": 130,
     "displayed": 1000
    }
   },
   {
    "category": "promo_sale",
    "rich": {
     "successes": 160,
     "displayed": 2000
    },
    "plain": {
     "successes": 135,
     "displayed": 1500
    }
   }
  ],
  "crude_pooled": {
   "rich_rate": 0.14216867469879518,
   "plain_rate": 0.25,
   "difference": -0.10783132530120482
  },
  "mantel_haenszel_risk_difference": {
   "estimate": 0.008431372549019609,
   "se_sato": 0.007673256174380972,
   "ci95": [
    -0.006607933196916693,
    0.02347067829495591
   ]
  },
  "mantel_haenszel_risk_ratio": {
   "estimate": 1.0578734858681025,
   "se_log_greenland_robins": 0.051680647092189266,
   "ci95": [
    0.9559674073070422,
    1.1706427473874053
   ],
   "statsmodels_StratifiedTable_riskratio_pooled": 1.0578734858681025
  },
  "cmh_test_no_continuity_correction": {
   "statistic": 1.1815857002085348,
   "p_value": 0.27703341481260957,
   "statsmodels_test_null_odds_correction_False": 0.27703341481261257
  },
  "breslow_day_homogeneity_p_statsmodels_test_equal_odds": 0.1512557728956968,
  "references": [
   "Sato T (1989) Biometrics 45:1323",
   "Greenland S, Robins JM (1985) Biometrics 41:55",
   "statsmodels.stats.contingency_tables.StratifiedTable"
  ]
 },
 "relative_intervals": [
  {
   "rich": [
    11,
    62
   ],
   "plain": [
    1,
    10
   ],
   "relative_lift": 0.7741935483870968,
   "statsmodels_confint_proportions_2indep_ratio_log_as_relative": [
    -0.7437867287819523,
    11.285713117723423
   ],
   "statsmodels_confint_proportions_2indep_ratio_score_as_relative": [
    -0.6210382528070765,
    9.54798362348052
   ]
  },
  {
   "rich": [
    40,
    130
   ],
   "plain": [
    7,
    40
   ],
   "relative_lift": 0.7582417582417584,
   "statsmodels_confint_proportions_2indep_ratio_log_as_relative": [
    -0.14466489618341238,
    2.614272425662038
   ],
   "statsmodels_confint_proportions_2indep_ratio_score_as_relative": [
    -0.09574132578168859,
    2.6733057141559375
   ]
  }
 ]
}

"""#
}
