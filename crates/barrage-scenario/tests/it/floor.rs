//! The crate's floor: scenario files are pure data, so this crate depends on no other barrage
//! crate (the engine and metrics come in through the binary, never here).

#[test]
fn scenario_crate_depends_on_no_barrage_crate() {
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let deps: toml::Table = toml::from_str(&manifest).unwrap();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        for name in deps
            .get(section)
            .and_then(|d| d.as_table())
            .into_iter()
            .flat_map(|t| t.keys())
        {
            assert!(
                !name.starts_with("barrage"),
                "barrage-scenario must not depend on {name}"
            );
        }
    }
}
