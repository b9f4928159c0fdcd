//! Every scenario in the repository's `examples/` folder is valid (CI runs this test), and
//! each says what it claims to.

use std::path::PathBuf;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn every_example_validates() {
    let mut n = 0;
    for e in std::fs::read_dir(examples()).unwrap() {
        let path = e.unwrap().path();
        if barrage_scenario::Format::of(&path).is_none() {
            continue;
        }
        let c = barrage_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.count.steps > 0, "{}", path.display());
        n += 1;
    }
    assert!(n >= 4, "only {n} scenario files in examples/");
}

#[test]
fn chat_example_is_the_seed_session() {
    let c = barrage_scenario::load(&examples().join("chat.toml")).unwrap();
    assert_eq!(c.users, 3000);
    assert_eq!(c.shape, barrage_scenario::Shape::Rate(50.0));
    assert_eq!(c.named, ["login", "join", "say", "ping", "bye"]);
    assert_eq!(c.captures, ["session"]);
    assert_eq!((c.count.steps, c.count.on, c.count.leave), (4, 1, 1));
    assert_eq!(
        c.summary(),
        "3000 users (arrive 50/s, last at 59.98s, hold 60s, depart at end), 4 steps that send (1 on leaving), 1 pause, 1 on rule, 1 capture; named: login, join, say, ping, bye"
    );
}

#[test]
fn routes_example_names_three_routes() {
    let c = barrage_scenario::load(&examples().join("routes.toml")).unwrap();
    assert_eq!(c.named, ["static", "sayhi", "page"]);
    assert_eq!(c.count.steps, 4);
}

#[test]
fn yaml_example_uses_the_same_schema() {
    let c = barrage_scenario::load(&examples().join("engineio.yaml")).unwrap();
    assert_eq!(c.users, 500);
    assert_eq!(c.captures, ["sid", "eio"]);
    assert_eq!(
        c.named,
        ["open", "hello", "chat", "open-packet", "ping", "goodbye"]
    );
}
