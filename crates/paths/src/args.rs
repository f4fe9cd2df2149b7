//! A command line being written from typed options: the one writer the binaries' option
//! structs render themselves with (`to_args`), so xtask builds its runs from types. Each value
//! goes in as its `Display`, which the option's parser reads back to the same value (each
//! option struct's round-trip test checks that).
use std::fmt::Display;

/// Arguments in order, each option's name then its value.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args(Vec<String>);

impl Args {
    /// `--name value`.
    pub fn value(&mut self, name: &str, v: impl Display) {
        self.0.push(name.to_owned());
        self.0.push(v.to_string());
    }

    /// `--name value` unless `v` is the default (so a rendered line says only what differs).
    pub fn changed<T: Display + PartialEq>(&mut self, name: &str, v: &T, default: &T) {
        if v != default {
            self.value(name, v);
        }
    }

    /// `--name value` when there is one.
    pub fn some(&mut self, name: &str, v: Option<impl Display>) {
        if let Some(v) = v {
            self.value(name, v);
        }
    }

    /// An option whose value may be left out (`require_equals`): `--name` when `v` is `bare`
    /// (the value the bare option means), `--name=v` for another value, nothing for `None`.
    pub fn bare_or_equals<T: Display + PartialEq>(&mut self, name: &str, v: Option<&T>, bare: &T) {
        match v {
            Some(v) if v == bare => self.0.push(name.to_owned()),
            Some(v) => self.0.push(format!("{name}={v}")),
            None => {}
        }
    }

    /// `--name` when on.
    pub fn flag(&mut self, name: &str, on: bool) {
        if on {
            self.0.push(name.to_owned());
        }
    }

    /// `--name a,b,c` when the list is not empty.
    pub fn list<T: Display>(&mut self, name: &str, vs: &[T]) {
        if !vs.is_empty() {
            let joined: Vec<String> = vs.iter().map(ToString::to_string).collect();
            self.value(name, joined.join(","));
        }
    }

    /// A bare word (a subcommand's name).
    pub fn word(&mut self, w: &str) {
        self.0.push(w.to_owned());
    }

    /// The arguments, in order.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Args;

    #[test]
    fn writes_what_differs_in_order() {
        let mut a = Args::default();
        a.word("lies");
        a.value("--rate", 5);
        a.changed("--jump", &7, &7);
        a.changed("--rounds", &3, &10);
        a.some("--bind", None::<u8>);
        a.some("--spoof", Some("198.18.0.1:1"));
        a.flag("--ready", false);
        a.flag("--check", true);
        a.list("--kinds", &["ahead", "at_next"]);
        a.list::<&str>("--none", &[]);
        a.bare_or_equals("--stages", Some(&"each"), &"each");
        a.bare_or_equals("--timing", Some(&"run"), &"each");
        a.bare_or_equals("--unset", None, &"each");
        assert_eq!(
            a.into_vec(),
            [
                "lies",
                "--rate",
                "5",
                "--rounds",
                "3",
                "--spoof",
                "198.18.0.1:1",
                "--check",
                "--kinds",
                "ahead,at_next",
                "--stages",
                "--timing=run"
            ]
        );
    }
}
