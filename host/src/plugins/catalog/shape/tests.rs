//! The shape read from real and hand-built components.

use super::*;

fn component(wat: &str) -> Vec<u8> {
    wat::parse_str(wat).expect("valid WAT")
}

#[test]
fn counts_instances_memories_and_initial_pages_of_each_instantiation() {
    // Arrange: one module with a 3-page memory and a table, instantiated twice, and one
    // with nothing, instantiated once.
    let wasm = component(
        r#"(component
             (import "loan:reporting/clock@1.0.0" (instance))
             (core module $a (memory 3) (table 1 funcref))
             (core module $b)
             (core instance (instantiate $a))
             (core instance (instantiate $a))
             (core instance (instantiate $b)))"#,
    );
    // Act
    let shape = Shape::of(&wasm).unwrap();
    // Assert
    assert_eq!(shape.imports, vec!["loan:reporting/clock@1.0.0"]);
    assert_eq!(shape.core_instances, 3);
    assert_eq!(shape.memories, 2);
    assert_eq!(shape.tables, 2);
    assert_eq!(shape.initial_memory, 6 * PAGE);
    assert_eq!(shape.initial_memory_mib(), 1);
}

#[test]
fn the_image_ends_with_the_last_initialised_page_and_never_passes_the_memory() {
    // Arrange: 8 pages, data up to a byte into page 3 (the image: 3 pages); a second
    // module whose data would pass its 1-page memory (it would trap) counts that page at most.
    let wasm = component(
        r#"(component
             (core module $a (memory 8) (data (i32.const 131072) "x") (data (i32.const 10) "y"))
             (core module $b (memory 1) (data (i32.const 70000) "z"))
             (core module $c (memory 4))
             (core instance (instantiate $a))
             (core instance (instantiate $b))
             (core instance (instantiate $c)))"#,
    );
    // Act
    let shape = Shape::of(&wasm).unwrap();
    // Assert
    assert_eq!(shape.initial_memory, 13 * PAGE);
    assert_eq!(
        shape.image_memory,
        4 * PAGE,
        "3 pages of $a, 1 of $b, none of $c"
    );
}

#[test]
fn nested_components_count_their_own_instances() {
    let wasm = component(
        r#"(component
             (component $inner
               (core module $m (memory 16))
               (core instance (instantiate $m)))
             (core module $outer (memory 1))
             (core instance (instantiate $outer))
             (instance (instantiate $inner)))"#,
    );
    let shape = Shape::of(&wasm).unwrap();
    assert_eq!(shape.core_instances, 2);
    assert_eq!(shape.memories, 2);
    assert_eq!(shape.initial_memory, 17 * PAGE);
    assert!(shape.imports.is_empty(), "only the top level's imports");
}

#[test]
fn a_nested_component_counts_once_per_instantiation_and_never_when_not_instantiated() {
    // Arrange: $inner (one instance, 16 pages of image-less memory, a 100-element table)
    // instantiated three times, once of them through an outer alias in a nested
    // component; $idle, with an imaged memory, never.
    let wasm = component(
        r#"(component
             (component $inner
               (core module $m (memory 16) (table 100 funcref))
               (core instance (instantiate $m)))
             (component $idle
               (core module $d (memory 4) (data (i32.const 0) "x"))
               (core instance (instantiate $d)))
             (instance (instantiate $inner))
             (instance (instantiate $inner))
             (component $wrap
               (alias outer 1 $inner (component $again))
               (instance (instantiate $again)))
             (instance (instantiate $wrap))
             (export "loan:reporting/tool@1.0.0" (instance 0)))"#,
    );
    // Act
    let shape = Shape::of(&wasm).unwrap();
    // Assert
    assert_eq!(shape.core_instances, 3);
    assert_eq!(shape.memories, 3);
    assert_eq!(shape.tables, 3);
    assert_eq!(shape.table_elements, 300);
    assert_eq!(shape.initial_memory, 48 * PAGE);
    assert_eq!(shape.image_memory, 0, "the imaged memory is never created");
    assert_eq!(shape.exports, vec!["loan:reporting/tool@1.0.0"]);
}

#[test]
fn instantiating_a_component_or_module_it_does_not_define_is_refused() {
    let wasm = component(
        r#"(component
             (component $takes
               (import "c" (component $c))
               (instance (instantiate $c))
               (instance (instantiate $c)))
             (component $big
               (core module $m (memory 8))
               (core instance (instantiate $m)))
             (instance (instantiate $takes (with "c" (component $big)))))"#,
    );
    assert!(Shape::of(&wasm)
        .unwrap_err()
        .contains("instantiates component 0"));
    let module = component(
        r#"(component
             (import "m" (core module $m))
             (core instance (instantiate $m)))"#,
    );
    assert!(Shape::of(&module)
        .unwrap_err()
        .contains("instantiates module 0"));
}

#[test]
fn wasi_imports_name_the_flag_that_removes_them() {
    let hint = wasi_hint("wasi:cli/environment@0.2.0");
    assert!(hint.contains("--stub-wasi") && hint.contains("--disable all"));
    assert!(!wasi_hint("acme:thing/x").contains("--stub-wasi"));
}
