//! Pricing: a scenario is priced from the bands it fits, lowest rate first, only for a caller
//! licensed in its state with a licence that has not expired; malformed scenarios are refused
//! with the field named; the sheet's import replaces it whole and refuses bad lines.

use super::*;
use crate::data::licensing::tests::{agents, import, imported, license, ME, OTHER};

fn rate_line(product: &str, min_score: i64, max_ltv: &str, rate: &str) -> String {
    format!(
        r#"{{"product":"{product}","loanType":"Conventional","purpose":null,"occupancy":"PrimaryResidence","termMonths":360,"lockDays":30,"minCreditScore":{min_score},"maxCreditScore":850,"minLtv":0,"maxLtv":{max_ltv},"minLoanAmount":50000,"maxLoanAmount":766550,"rate":"{rate}","points":"0.25","effectiveDate":"2026-12-01"}}"#
    )
}

fn sheet() -> String {
    [
        rate_line("A", 700, "80", "6.5"),
        rate_line("B", 740, "80", "6.25"),
        rate_line("C", 620, "97", "7.125"),
    ]
    .join("\n")
}

fn scenario(state: &str, score: u32, ltv: &str) -> Scenario {
    Scenario {
        property_state: state.into(),
        loan_amount: "400000".into(),
        property_value: None,
        ltv: Some(ltv.into()),
        credit_score: score,
        loan_type: "Conventional".into(),
        purpose: "Purchase".into(),
        occupancy: "PrimaryResidence".into(),
        term_months: 360,
        lock_days: 30,
    }
}

async fn priced() -> (tempfile::TempDir, Db) {
    let licences = [license(ME, "TX", "2026"), license(ME, "CA", "2025")].join("\n");
    imported(&[
        ("agents.jsonl", agents()),
        ("user_licenses.jsonl", licences),
        ("pricing.jsonl", sheet()),
    ])
    .await
}

#[tokio::test]
async fn a_scenario_gets_the_bands_it_fits_lowest_rate_first() {
    // Arrange
    let (_dir, db) = priced().await;
    // Act
    let high = quote(&db, ME, 2026, &scenario("tx", 760, "80"))
        .await
        .unwrap();
    let low = quote(&db, ME, 2026, &scenario("TX", 700, "80.001"))
        .await
        .unwrap();
    let by_value = quote(
        &db,
        ME,
        2026,
        &Scenario {
            ltv: None,
            property_value: Some("500000".into()),
            ..scenario("TX", 745, "0")
        },
    )
    .await
    .unwrap();
    // Assert
    let products = |p: &Priced| {
        p.quotes
            .iter()
            .map(|q| q.product.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(products(&high), ["B", "A", "C"]);
    assert_eq!(high.quotes[0].rate, 62_500);
    assert_eq!(
        products(&low),
        ["C"],
        "80.001 % is priced in the band above 80"
    );
    assert_eq!(low.ltv, 800_100);
    assert_eq!(by_value.ltv, 800_000, "400,000 of 500,000");
    assert_eq!(products(&by_value), ["B", "A", "C"]);
}

#[tokio::test]
async fn only_a_caller_licensed_in_the_state_this_year_is_priced() {
    // Arrange
    let (_dir, db) = priced().await;
    // Act + Assert
    for (who, state, year) in [
        (ME, "CA", 2026),
        (ME, "FL", 2026),
        (ME, "TX", 2027),
        (OTHER, "TX", 2026),
    ] {
        let e = quote(&db, who, year, &scenario(state, 760, "80"))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, PricingError::NotLicensed(m) if m.contains(state)),
            "{who} {state} {year}: {e}"
        );
    }
    assert!(quote(&db, ME, 2026, &scenario("TX", 760, "80"))
        .await
        .is_ok());
}

#[tokio::test]
async fn a_malformed_scenario_is_refused_with_its_field() {
    // Arrange
    let (_dir, db) = priced().await;
    let cases = [
        (scenario("Texas", 760, "80"), "propertyState: "),
        (scenario("TX", 900, "80"), "creditScore: 900"),
        (scenario("TX", 760, "120"), "ltv: must be above 0"),
        (
            Scenario {
                loan_type: "Jumbo".into(),
                ..scenario("TX", 760, "80")
            },
            "loanType: `Jumbo`",
        ),
        (
            Scenario {
                occupancy: "Home".into(),
                ..scenario("TX", 760, "80")
            },
            "occupancy: `Home`",
        ),
        (
            Scenario {
                property_value: Some("1".into()),
                ..scenario("TX", 760, "80")
            },
            "give one of",
        ),
        (
            Scenario {
                loan_amount: "-5".into(),
                ..scenario("TX", 760, "80")
            },
            "loanAmount: ",
        ),
    ];
    for (s, start) in cases {
        // Act
        let e = quote(&db, ME, 2026, &s).await.unwrap_err();
        // Assert
        assert!(matches!(e, PricingError::Invalid(_)), "{e}");
        assert!(e.to_string().starts_with(start), "{e}, expected {start}");
    }
}

#[tokio::test]
async fn the_sheet_is_replaced_whole_and_a_bad_line_keeps_the_old_one() {
    // Arrange
    let (dir, db) = priced().await;
    // Act: a sheet of one product, then one with a bad line.
    import(
        &db,
        dir.path(),
        &[("pricing.jsonl", rate_line("D", 300, "100", "7"))],
    )
    .await
    .unwrap();
    let replaced = quote(&db, ME, 2026, &scenario("TX", 760, "80"))
        .await
        .unwrap();
    let bad = [
        rate_line("E", 300, "100", "7"),
        rate_line("F", 800, "100", "0"),
    ]
    .join("\n");
    let e = import(&db, dir.path(), &[("pricing.jsonl", bad)])
        .await
        .unwrap_err();
    let kept = quote(&db, ME, 2026, &scenario("TX", 760, "80"))
        .await
        .unwrap();
    // Assert
    assert_eq!(replaced.quotes.len(), 1);
    assert_eq!(replaced.quotes[0].product, "D");
    assert!(
        e.to_string()
            .starts_with("pricing.jsonl:2: rate: must be above 0"),
        "{e}"
    );
    assert_eq!(kept, replaced);
}
