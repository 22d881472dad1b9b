//! The mutation list stays runnable: `scripts/mutate.py` plants each entry's line, so each
//! line must be in its file exactly once, and each entry must name the tests that catch it.

use serde_json::Value;

use crate::helpers::root;

#[test]
fn every_mutation_names_a_line_that_is_there_once() {
    // Arrange
    let list: Vec<Value> =
        serde_json::from_slice(&std::fs::read(root().join("tests/mutations.json")).unwrap())
            .unwrap();

    // Act: the entries whose line is missing, repeated, or that name no test.
    let mut ids = std::collections::HashSet::new();
    let wrong: Vec<String> = list
        .iter()
        .filter_map(|m| {
            let id = m["id"].as_str().unwrap_or("(no id)");
            let file = m["file"].as_str().unwrap_or("");
            let old = m["old"].as_str().unwrap_or("");
            let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
            let number = id.split_whitespace().next().unwrap_or("").to_string();
            let named = m["tests"].as_array().is_some_and(|t| !t.is_empty()) || m.get("cmd").is_some();
            match (text.matches(old).count(), named, ids.insert(number)) {
                (1, true, true) => None,
                (n, named, unique) => Some(format!(
                    "{id}: its line is in {file} {n} times, names tests: {named}, unique id: {unique}"
                )),
            }
        })
        .collect();

    // Assert
    assert!(list.len() > 200, "the list has {} entries", list.len());
    assert!(wrong.is_empty(), "{wrong:#?}");
}
