//! The seed's licences and rate sheet: each officer licensed in the states of their loans (one
//! in eight of those licences expired last year, one officer in five licensed in one state more),
//! and a rate sheet by product, term, occupancy, lock, credit score band and LTV band, its rates
//! drawn once per seed around today's market. Drawn from a generator of their own, after the
//! loans, so the loans of a seed stay what they were.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::paths::STATES;

/// Mixed into the seed for the generator of licences and prices.
const STREAM: u64 = 0x0001_1C35_E50F_1CE5;

/// The states of each officer's loans, by officer id.
pub(super) type Licensed = BTreeMap<String, BTreeSet<&'static str>>;

/// Writes `user_licenses.jsonl`: a line per (officer, state), ordered by officer and state.
pub(super) fn write_licenses(
    out: &mut impl Write,
    seed: u64,
    year: i32,
    licensed: &Licensed,
) -> std::io::Result<u64> {
    let mut rng = StdRng::seed_from_u64(seed ^ STREAM);
    let mut lines = 0;
    for (officer, states) in licensed {
        let mut states = states.clone();
        if rng.gen_bool(0.2) {
            states.insert(STATES[rng.gen_range(0..STATES.len())]);
        }
        for state in states {
            let expires = match rng.gen_bool(0.125) {
                true => year - 1,
                false => year + rng.gen_range(0..3),
            };
            writeln!(
                out,
                "{}",
                json!({
                    "userId": officer,
                    "state": state,
                    "stateLicenseNumber": format!("{state}-{:07}", rng.gen_range(0..10_000_000)),
                    "expirationYear": expires.to_string(),
                })
            )?;
            lines += 1;
        }
    }
    Ok(lines)
}

/// A product of the rate sheet: its name, loan type, terms, occupancies, credit floor, the
/// LTV bands it prices, its amount range (in dollars) and its spread over the day's base rate.
struct Product {
    name: &'static str,
    loan_type: &'static str,
    terms: &'static [i64],
    occupancies: &'static [&'static str],
    min_score: i64,
    ltv_bands: &'static [(&'static str, &'static str)],
    amounts: (&'static str, &'static str),
    spread: f64,
}

const OWNER: &[&str] = &["PrimaryResidence"];
const EVERY: &[&str] = &["PrimaryResidence", "SecondHome", "Investment"];
const CONFORMING: (&str, &str) = ("50000", "766550");

const PRODUCTS: [Product; 5] = [
    Product {
        name: "Conventional fixed",
        loan_type: "Conventional",
        terms: &[360, 240, 180],
        occupancies: EVERY,
        min_score: 620,
        ltv_bands: &[
            ("0", "60"),
            ("60.01", "80"),
            ("80.01", "90"),
            ("90.01", "97"),
        ],
        amounts: CONFORMING,
        spread: 0.0,
    },
    Product {
        name: "Jumbo fixed",
        loan_type: "Conventional",
        terms: &[360],
        occupancies: &["PrimaryResidence", "SecondHome"],
        min_score: 700,
        ltv_bands: &[("0", "60"), ("60.01", "80")],
        amounts: ("766550.01", "3000000"),
        spread: 0.25,
    },
    Product {
        name: "FHA fixed",
        loan_type: "FHA",
        terms: &[360, 180],
        occupancies: OWNER,
        min_score: 580,
        ltv_bands: &[("0", "90"), ("90.01", "96.5")],
        amounts: CONFORMING,
        spread: -0.25,
    },
    Product {
        name: "VA fixed",
        loan_type: "VA",
        terms: &[360, 180],
        occupancies: OWNER,
        min_score: 580,
        ltv_bands: &[("0", "90"), ("90.01", "100")],
        amounts: ("50000", "1500000"),
        spread: -0.375,
    },
    Product {
        name: "USDA fixed",
        loan_type: "USDA/Rural Housing",
        terms: &[360],
        occupancies: OWNER,
        min_score: 620,
        ltv_bands: &[("0", "100")],
        amounts: ("50000", "500000"),
        spread: -0.25,
    },
];

/// Credit score bands, from 850 down; a product prices those at or above its floor.
const SCORE_BANDS: [(i64, i64, f64); 6] = [
    (760, 850, 0.0),
    (720, 759, 0.125),
    (680, 719, 0.375),
    (640, 679, 0.75),
    (620, 639, 1.0),
    (580, 619, 1.25),
];

/// Writes `pricing.jsonl`: every (product, term, occupancy, purpose, lock, score band, LTV band)
/// with its rate (to the eighth) and points.
pub(super) fn write_rate_sheet(
    out: &mut impl Write,
    seed: u64,
    effective: &str,
) -> std::io::Result<u64> {
    let mut rng = StdRng::seed_from_u64(seed ^ STREAM ^ 0xFF);
    // The day's 30-year base rate: 6.000 % to 6.999 %.
    let base = 6.0 + rng.gen_range(0..1000) as f64 / 1000.0;
    let mut lines = 0;
    for p in &PRODUCTS {
        for &term in p.terms {
            let term_spread = match term {
                360 => 0.0,
                240 => -0.25,
                _ => -0.625,
            };
            for &occupancy in p.occupancies {
                let occupancy_spread = match occupancy {
                    "PrimaryResidence" => 0.0,
                    "SecondHome" => 0.375,
                    _ => 0.75,
                };
                for purpose in ["Purchase", "Refinance", "Refinance Cashout"] {
                    let purpose_spread = if purpose == "Refinance Cashout" {
                        0.375
                    } else {
                        0.0
                    };
                    for lock in [30i64, 45, 60] {
                        let lock_spread = (lock - 30) as f64 / 15.0 * 0.0625;
                        for &(low, high, score_spread) in &SCORE_BANDS {
                            if low < p.min_score {
                                continue;
                            }
                            for (k, &(min_ltv, max_ltv)) in p.ltv_bands.iter().enumerate() {
                                let raw = base
                                    + p.spread
                                    + term_spread
                                    + occupancy_spread
                                    + purpose_spread
                                    + lock_spread
                                    + score_spread
                                    + k as f64 * 0.125;
                                let rate = (raw * 8.0).round() / 8.0;
                                // What rounding to the eighth left is bought down in points.
                                let points = ((raw - rate) * 4.0 * 1000.0).round() / 1000.0;
                                writeln!(
                                    out,
                                    "{}",
                                    json!({
                                        "product": format!("{} {}-year", p.name, term / 12),
                                        "loanType": p.loan_type,
                                        "purpose": purpose,
                                        "occupancy": occupancy,
                                        "termMonths": term,
                                        "lockDays": lock,
                                        "minCreditScore": low,
                                        "maxCreditScore": high,
                                        "minLtv": decimal(min_ltv),
                                        "maxLtv": decimal(max_ltv),
                                        "minLoanAmount": decimal(p.amounts.0),
                                        "maxLoanAmount": decimal(p.amounts.1),
                                        "rate": format!("{rate:.3}"),
                                        "points": format!("{points:.3}"),
                                        "effectiveDate": effective,
                                    })
                                )?;
                                lines += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(lines)
}

fn decimal(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("a decimal literal")
}
