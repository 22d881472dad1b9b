//! `get_loan_reporting_metadata` over MCP: exact values.

use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn metadata_returns_the_exact_vocabulary() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let result = app
        .call_tool("agent-token", "get_loan_reporting_metadata", json!({}))
        .await;

    // Assert
    let expected = json!({
        "statuses": [
            "App Started", "Loan Officer Review", "Loan Open", "Loan Prequal", "Loan Preapproval",
            "Loan Submitted", "Loan Approved", "Loan Docs", "Loan Funded", "Loan On Hold",
            "Loan Suspended", "Loan Canceled", "Loan Denied", "Loan Closed", "Loan Underwriting",
            "Loan Other", "Loan Recorded", "Loan Clear To Close", "Loan Processing",
            "Loan Final Underwriting", "Loan Docs Back", "Loan Funding Conditions", "Loan Final Docs",
            "Loan Sold", "Loan Pre-Processing", "Loan Document Check", "Loan Document Check Failed",
            "Loan Pre-Underwriting", "Loan Condition Review", "Loan Pre-Doc QC", "Loan Docs Ordered",
            "Loan Docs Drawn", "Loan Investor Conditions", "Loan Investor Conditions Sent",
            "Loan Ready For Sale", "Loan Submitted For Purchase Review", "Loan In Purchase Review",
            "Loan Pre-Purchase Conditions", "Loan Submitted For Final Purchase Review",
            "Loan In Final Purchase Review", "Loan Clear To Purchase", "Loan Purchased",
            "Loan Counter Offer", "Loan Withdrawn", "Loan Archived"
        ],
        "loanTypes": ["Conventional", "FHA", "VA", "USDA/Rural Housing", "Other"],
        "purposes": ["Purchase", "Refinance", "Refinance Cashout", "Construction", "Construction Perm",
                     "Other", "FHA Streamline Refi", "VA IRRRL", "Home Equity"],
        "groupByDimensions": ["None", "Status", "LoanType", "Purpose", "LoanOfficer", "ReferringAgent",
                              "Month", "Quarter", "Year"],
        "metricFunctions": ["Count", "Sum", "Average", "Min", "Max"],
        "metricFields": ["LoanAmount", "LockedCompensation", "EstimatedCompensation"],
        "dateFields": ["StatusDate", "ClosingDate", "Updated"],
        "orderByOptions": ["updated", "statusDate", "amount", "closingDate", "commission"],
        "northstarStages": ["1. Opened", "2. Pre-Approved", "3. Rate Locked", "4. Approved", "5. Closed & Funded"],
        "milestoneGranularities": ["Week", "Month"]
    });
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], expected);
    let text: serde_json::Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, expected, "the text content holds the same JSON");
    assert_eq!(expected["statuses"].as_array().unwrap().len(), 45);
}

#[tokio::test]
async fn metadata_refuses_arguments() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let text = app
        .call_err(
            "agent-token",
            "get_loan_reporting_metadata",
            json!({"userId": "x"}),
        )
        .await;

    // Assert
    assert!(
        text.starts_with("invalid_params: unknown field `userId`"),
        "{text}"
    );
}

#[tokio::test]
async fn metadata_is_listed_read_only_with_schemas() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let reply = app.rpc("agent-token", "tools/list", json!({})).await;

    // Assert
    let tools = reply["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    let t = &tools[0];
    assert_eq!(t["name"], "get_loan_reporting_metadata");
    assert_eq!(t["annotations"]["readOnlyHint"], true);
    assert_eq!(t["inputSchema"]["type"], "object");
    assert_eq!(t["outputSchema"]["required"].as_array().unwrap().len(), 10);
}

#[tokio::test]
async fn a_caller_without_an_accepted_role_is_forbidden() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let text = app
        .call_err(
            "prelicensed-token",
            "get_loan_reporting_metadata",
            json!({}),
        )
        .await;

    // Assert
    assert_eq!(
        text,
        "forbidden: `get_loan_reporting_metadata` requires one of the roles Admin, Processor, DualLicensedAgent, ConciergeKey, Agent; the caller has PreLicensed, User"
    );
}
