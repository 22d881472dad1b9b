//! The report views drawn in headless Chromium through the extension SDK's `AppBridge` and the
//! official TypeScript client: every bucket's label and value drawn, charts sized, the theme
//! followed, no console error, no request outside the page.

use serde_json::{json, Value};

use super::{app_with_every_tool, MIME};
use crate::differential::applications::{report, SECTIONS};
use crate::helpers::seed_app;

/// A number as the views print it: `en-US` grouping, at most two decimals.
pub(super) fn printed(v: &Value) -> String {
    let n: f64 = match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => s.parse().unwrap(),
        other => panic!("not a number: {other}"),
    };
    let rounded = (n * 100.0).round() / 100.0;
    let whole = rounded.trunc() as i64;
    let mut digits = whole.abs().to_string();
    let mut grouped = String::new();
    while digits.len() > 3 {
        let tail = digits.split_off(digits.len() - 3);
        grouped = format!(",{tail}{grouped}");
    }
    let mut out = format!("{}{digits}{grouped}", if whole < 0 { "-" } else { "" });
    let cents = ((rounded.fract().abs() * 100.0).round()) as i64;
    if cents != 0 {
        out.push_str(format!(".{cents:02}").trim_end_matches('0'));
    }
    out
}

#[test]
fn numbers_are_printed_as_the_views_print_them() {
    assert_eq!(printed(&json!(1234567)), "1,234,567");
    assert_eq!(printed(&json!(12.5)), "12.5");
    assert_eq!(printed(&json!("1000.05")), "1,000.05");
    assert_eq!(printed(&json!(999)), "999");
}

/// One browser case: who calls which tool with what, in which theme and width.
pub(super) fn case(
    name: &str,
    token: &str,
    tool: &str,
    args: Value,
    theme: &str,
    width: u32,
) -> Value {
    json!({"name": name, "token": token, "tool": tool, "args": args, "theme": theme, "width": width})
}

#[tokio::test]
async fn every_view_draws_its_report_in_a_real_browser() {
    // Arrange: seeded loans, history and warehouse rows; every tool with its view.
    let app = app_with_every_tool().await;
    let data = seed_app(&app, 26, 600).await;
    let admin = app.bearer("admin-token");
    let agent = app.bearer("agent-token");
    let picked = applications_to_draw(&data.applications);
    let mut cases = json!([
        case(
            "report_loans-status-light",
            &admin,
            "report_loans",
            json!({"groupBy": "Status"}),
            "light",
            720
        ),
        case(
            "report_loans-year-sum-dark",
            &admin,
            "report_loans",
            json!({"groupBy": "Year", "metric": "Sum", "metricField": "LoanAmount"}),
            "dark",
            720
        ),
        case(
            "report_loans-month-light",
            &admin,
            "report_loans",
            json!({"groupBy": "Month"}),
            "light",
            720
        ),
        case(
            "report_loans-loantype-narrow",
            &admin,
            "report_loans",
            json!({"groupBy": "LoanType", "metric": "Average", "metricField": "LoanAmount"}),
            "light",
            300
        ),
        case(
            "report_loans-empty",
            &admin,
            "report_loans",
            json!({"groupBy": "Status", "filter": {"loanAmountMin": 999999999999u64}}),
            "light",
            720
        ),
        case(
            "report_loans-error",
            &admin,
            "report_loans",
            json!({"groupBy": "Nope"}),
            "dark",
            720
        ),
        case(
            "loan_pipeline_report-light",
            &admin,
            "loan_pipeline_report",
            json!({"lookbackMonths": 12}),
            "light",
            720
        ),
        case(
            "report_loan_milestones-dark",
            &admin,
            "report_loan_milestones",
            json!({"granularity": "Month", "lookback": 6}),
            "dark",
            720
        ),
        case(
            "mlo_pipeline_report-light",
            &admin,
            "mlo_pipeline_report",
            json!({"bucket": "Month"}),
            "light",
            720
        ),
        case(
            "warehouse_loan_milestone_report-dark",
            &admin,
            "warehouse_loan_milestone_report",
            json!({"bucket": "Month", "fromDate": "2025-10-01", "toDate": "2026-03-15"}),
            "dark",
            720
        ),
    ]);
    let cases_of = cases.as_array_mut().unwrap();
    for (kind, app_line) in &picked {
        let (theme, width) = match *kind {
            "ready" => ("light", 720),
            "blocked" => ("dark", 300),
            _ => ("light", 480),
        };
        cases_of.push(case(
            &format!("get_loan_application-{kind}"),
            &admin,
            "get_loan_application",
            json!({"loanApplicationId": app_line["id"]}),
            theme,
            width,
        ));
    }
    cases_of.push(case(
        "get_loan_application-unknown",
        &agent,
        "get_loan_application",
        json!({"loanApplicationId": "0fffffff-0000-4000-8000-000000000000"}),
        "dark",
        720,
    ));
    let shots = std::env::var_os("VIEW_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("loanhost-view-shots-{}", std::process::id()))
        });
    let clients = crate::helpers::root().join("tests/clients");

    // Act: the host page (AppBridge + the official client) in headless Chromium.
    let run = tokio::process::Command::new(clients.join("node_modules/.bin/node"))
        .arg(clients.join("views/run.mjs"))
        .env("BASE", &app.base)
        .env("CASES", cases.to_string())
        .env("SHOTS", &shots)
        .current_dir(&clients)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("the browser run ended within 5 minutes")
        .unwrap();
    assert!(
        out.status.success(),
        "the browser run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    let by_name = |n: &str| {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no case {n}"))
            .clone()
    };

    // Assert: for every case, the view was the one the tool named, nothing outside the page
    // was requested, nothing was logged as an error, and every chart has a size.
    for c in report["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        assert_eq!(c["mimeType"], MIME, "{name}");
        assert_eq!(c["foreignRequests"], json!([]), "{name}");
        assert_eq!(c["consoleErrors"], json!([]), "{name}");
        assert!(
            c["sized"].as_u64().unwrap() > 0,
            "{name}: the view never reported its size"
        );
        for chart in c["drawn"]["charts"].as_array().unwrap() {
            assert!(chart["width"].as_u64().unwrap() >= 200, "{name}: {chart}");
            assert!(chart["height"].as_u64().unwrap() >= 60, "{name}: {chart}");
        }
        let drawn = &c["drawn"];
        assert!(
            drawn["scrollWidth"].as_u64() <= drawn["clientWidth"].as_u64(),
            "{name}: the view overflows its width: {drawn}"
        );
        assert_eq!(
            drawn["theme"], c["theme"],
            "{name}: the host's theme is followed"
        );
        let dark = drawn["background"] == "rgb(23, 23, 23)";
        assert_eq!(
            dark,
            c["theme"] == "dark",
            "{name}: background {}",
            drawn["background"]
        );
    }
    let texts = |c: &Value| -> Vec<String> {
        c["drawn"]["svgTexts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    let assert_drawn = |c: &Value, wanted: &[String]| {
        let t = texts(c);
        for w in wanted {
            assert!(
                t.contains(w),
                "{}: `{w}` not drawn; drawn: {t:?}",
                c["name"]
            );
        }
    };

    // report_loans by a dimension: every bucket's key and value.
    for n in ["report_loans-status-light", "report_loans-loantype-narrow"] {
        let c = by_name(n);
        let buckets = c["result"]["structuredContent"]["buckets"]
            .as_array()
            .unwrap()
            .clone();
        assert!(buckets.len() >= 3, "{n}: {buckets:?}");
        let keys: Vec<String> = buckets
            .iter()
            .map(|b| b["key"].as_str().unwrap().to_string())
            .collect();
        let values: Vec<String> = buckets.iter().map(|b| printed(&b["value"])).collect();
        assert_drawn(&c, &values);
        if n.ends_with("light") {
            assert_drawn(&c, &keys);
        }
        assert_eq!(c["drawn"]["tableRows"], buckets.len());
    }
    // By year: bars on a time axis, each labelled with its value.
    let c = by_name("report_loans-year-sum-dark");
    let buckets = c["result"]["structuredContent"]["buckets"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!buckets.is_empty());
    assert_drawn(
        &c,
        &buckets
            .iter()
            .filter(|b| !b["value"].is_null())
            .map(|b| printed(&b["value"]))
            .collect::<Vec<_>>(),
    );
    assert_eq!(c["drawn"]["title"], "Sum of LoanAmount by Year");
    // By month: a time axis with the years named.
    let c = by_name("report_loans-month-light");
    assert!(
        texts(&c).iter().any(|t| t.ends_with("2026")),
        "{:?}",
        texts(&c)
    );
    // An empty result says so; an error result shows the tool's error.
    let c = by_name("report_loans-empty");
    assert_eq!(c["result"]["structuredContent"]["buckets"], json!([]));
    assert_eq!(c["drawn"]["charts"], json!([]));
    assert!(c["drawn"]["empty"][0]
        .as_str()
        .unwrap()
        .starts_with("No loans match."));
    let c = by_name("report_loans-error");
    assert_eq!(c["result"]["isError"], true);
    let error = c["drawn"]["errors"][0].as_str().unwrap();
    assert!(
        error.starts_with("The report could not be made. invalid_params:"),
        "{error}"
    );

    // The pipeline: every stage with its count, the note shown.
    let c = by_name("loan_pipeline_report-light");
    let r = &c["result"]["structuredContent"];
    let stages = r["currentPipelineByStage"].as_array().unwrap();
    assert_drawn(
        &c,
        &stages
            .iter()
            .map(|s| s["stage"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
    );
    assert_drawn(
        &c,
        &stages
            .iter()
            .map(|s| printed(&s["count"]))
            .collect::<Vec<_>>(),
    );
    assert_eq!(c["drawn"]["notes"][0], r["note"]);
    assert_eq!(
        c["drawn"]["charts"].as_array().unwrap().len(),
        2,
        "stages and trend"
    );

    // The milestones: every stage named, the funnel's totals drawn, the note shown.
    let c = by_name("report_loan_milestones-dark");
    let r = &c["result"]["structuredContent"];
    let buckets = r["buckets"].as_array().unwrap();
    assert!(!buckets.is_empty());
    let mut totals = std::collections::BTreeMap::<String, u64>::new();
    for b in buckets {
        *totals
            .entry(b["stage"].as_str().unwrap().to_string())
            .or_default() += b["loanCount"].as_u64().unwrap();
    }
    assert_drawn(&c, &totals.keys().cloned().collect::<Vec<_>>());
    assert_drawn(
        &c,
        &totals
            .values()
            .map(|v| printed(&json!(v)))
            .collect::<Vec<_>>(),
    );
    assert_eq!(c["drawn"]["notes"][0], r["note"]);

    // The warehouse reports: a heatmap naming every stage or milestone and every period.
    for (n, category, count) in [
        ("mlo_pipeline_report-light", "stage", "entryCount"),
        (
            "warehouse_loan_milestone_report-dark",
            "milestone",
            "loanCount",
        ),
    ] {
        let c = by_name(n);
        let rows = c["result"]["structuredContent"]["rows"]
            .as_array()
            .unwrap()
            .clone();
        assert!(!rows.is_empty(), "{n}");
        let categories: std::collections::BTreeSet<String> = rows
            .iter()
            .map(|r| r[category].as_str().unwrap().to_string())
            .collect();
        assert_drawn(&c, &categories.into_iter().collect::<Vec<_>>());
        let counts: Vec<String> = rows.iter().map(|r| printed(&r[count])).collect();
        assert_drawn(&c, &counts);
        assert_eq!(c["drawn"]["tableRows"], rows.len());
    }

    // The loan application: its verdict, what blocks it, and its sections, as the report says.
    for (kind, line) in &picked {
        assert_application_drawn(&by_name(&format!("get_loan_application-{kind}")), line);
    }
    // An application the caller may not read answers as an unknown one, shown as an error.
    let c = by_name("get_loan_application-unknown");
    assert_eq!(c["result"]["isError"], true);
    let error = c["drawn"]["errors"][0].as_str().unwrap();
    assert!(
        error.starts_with(
            "The application could not be read. invalid_params: loanApplicationId: no loan \
             application with this id that you may read"
        ),
        "{error}"
    );
}

/// One seeded application of each kind the view tells apart: ready to submit, blocked (by a
/// section and a required document when one is blocked by both), and already submitted.
fn applications_to_draw(applications: &[Value]) -> Vec<(&'static str, Value)> {
    let find = |kind: &str, want: &dyn Fn(&Value, &[String]) -> bool| {
        applications
            .iter()
            .find(|a| want(a, &report(a).2))
            .unwrap_or_else(|| panic!("the seeded data has no {kind} application"))
            .clone()
    };
    vec![
        ("ready", find("ready", &|_, b| b.is_empty())),
        (
            "blocked",
            find("blocked", &|a, b| {
                a["isSubmitted"] != true
                    && b.iter().any(|r| r.starts_with("Section"))
                    && b.iter().any(|r| r.starts_with("Required document"))
            }),
        ),
        (
            "submitted",
            find("submitted", &|a, _| a["isSubmitted"] == true),
        ),
    ]
}

/// What the application view must have drawn for the import line `line`: its verdict, every
/// blocker in the report's order, and the seven sections in sidebar order with their status.
fn assert_application_drawn(c: &Value, line: &Value) {
    let name = c["name"].as_str().unwrap();
    let (_, ready, blockers) = report(line);
    let drawn = &c["drawn"];
    let verdict = if ready {
        "Ready to submit"
    } else if line["isSubmitted"] == true {
        "Already submitted"
    } else {
        "Not ready to submit"
    };
    assert_eq!(drawn["readiness"], verdict, "{name}");
    assert_eq!(drawn["blockers"], json!(blockers), "{name}");
    let sections = drawn["sections"].as_array().unwrap();
    let names: Vec<&str> = sections
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, SECTIONS, "{name}");
    for s in sections {
        let want = line["sections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["sectionName"] == s["name"])
            .map(|l| l["status"].clone())
            .unwrap_or(json!("NotStarted"));
        assert_eq!(s["status"], want, "{name}: {s}");
    }
    // The borrower's name (an Admin may read it) titles the view; the tasks are tabulated.
    let title = drawn["title"].as_str().unwrap();
    assert!(
        title.ends_with(&format!(
            "{} {}",
            line["borrower"]["firstName"].as_str().unwrap(),
            line["borrower"]["lastName"].as_str().unwrap()
        )),
        "{name}: {title}"
    );
    let tasks = line["tasks"].as_array().unwrap().len();
    let kinds = c["result"]["structuredContent"]["taskSummaries"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(drawn["tableRows"], tasks + kinds, "{name}");
}
