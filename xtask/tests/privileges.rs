//! Without root, the lab commands fail with a message naming the missing privilege, and
//! change nothing. (Run as root, as CI does; the commands are run as `nobody` via setpriv, which
//! itself needs root: as an ordinary user those tests say they are skipped.)

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::process::Command;
use {
    affinity as _, anyhow as _, clap as _, exchange as _, floor as _, hotpath as _, inject as _,
    market as _, paths as _, report as _, results as _, serde as _, serde_json as _,
    signal_hook as _, trader as _, tuning as _, wire as _,
};

fn as_nobody(args: &[&str]) -> std::process::Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("setpriv (util-linux) runs")
}

#[test]
fn lab_commands_without_root_name_the_missing_privilege_and_change_nothing() {
    if !netns::require_privileges_or_skip() {
        return;
    }
    let name = format!("t2t-noroot-{}", std::process::id());
    for cmd in ["netns-up", "netns-down"] {
        let out = as_nobody(&[cmd, "--name", &name]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd} must fail without root");
        assert!(stderr.contains("CAP_NET_ADMIN"), "{cmd}: {stderr}");
        assert!(stderr.contains("CAP_SYS_ADMIN"), "{cmd}: {stderr}");
        assert!(!stderr.contains("+ ip"), "{cmd} ran nothing: {stderr}");
    }
    assert!(!netns::ns_exists(&format!("{name}-ex")));
    assert!(!netns::ns_exists(&format!("{name}-tr")));
}

#[test]
fn the_test_command_without_root_says_why() {
    if !netns::require_privileges_or_skip() {
        return;
    }
    let out = as_nobody(&["test", "--no-setup"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("needs root"), "{stderr}");
}

#[test]
fn bad_lab_names_are_refused_with_the_rule() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["netns-up", "--name", "Bad Name"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("invalid lab name"), "{stderr}");
}

/// Options the trader or the replay would reject are found before anything is made: no lab,
/// no XDP program, no results folder, and the child's own message once.
#[test]
fn bad_bench_options_fail_before_the_lab_or_a_results_folder() {
    if !netns::require_privileges_or_skip() {
        return;
    }
    let lab = format!("t2t-pre{}", std::process::id() % 100_000);
    let out_dir = std::env::temp_dir().join(format!("t2t-preflight-{}", std::process::id()));
    // `bench` with `args` must fail, naming `needle`, having made no lab and no folder.
    let fails = |args: &[&str], needle: &str| -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["bench", "--no-setup", "--lab", &lab, "--out"])
            .arg(&out_dir)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{args:?} must fail");
        assert!(stderr.contains(needle), "{args:?} names {needle}: {stderr}");
        assert!(!out_dir.exists(), "{args:?}: no results folder");
        assert!(!netns::ns_exists(&format!("{lab}-ex")));
        stderr
    };
    for (args, needle) in [
        (&["--count", "0"][..], "--count"),
        (
            &["--source", "closes:/nonexistent/closes.f64"][..],
            "/nonexistent/closes.f64",
        ),
    ] {
        let stderr = fails(args, needle);
        assert!(
            stderr.contains("rejects these options"),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("+ ip"),
            "{args:?}: no lab command ran: {stderr}"
        );
    }
    // CPUs are xtask's own to check, before it builds or runs anything.
    for (args, needle) in [
        (
            &["--trader-cpu", "1023"][..],
            "--trader-cpu 1023: not a CPU",
        ),
        (
            &["--trader-cpu", "0", "--replay-cpu", "0"][..],
            "are both 0",
        ),
    ] {
        let stderr = fails(args, needle);
        assert!(!stderr.contains("+ "), "{args:?}: nothing ran: {stderr}");
    }
}

/// What xtask parses itself (a rate, a source's syntax, a wait or XDP mode: the types the
/// binaries share) is refused by its own parser, before it builds or runs anything.
#[test]
fn options_xtask_types_itself_are_refused_by_its_parser() {
    let out_dir = std::env::temp_dir().join(format!("t2t-parse-{}", std::process::id()));
    for (args, needle) in [
        (&["--rate", "0"][..], "out of range"),
        (&["--source", "csv:x"][..], "unknown source"),
        (&["--wait", "sleep"][..], "--wait"),
        (&["--xdp-mode", "offload"][..], "--xdp-mode"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["bench", "--no-setup", "--out"])
            .arg(&out_dir)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} must fail");
        assert!(stderr.contains("invalid value"), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?} names {needle}: {stderr}");
        assert!(!stderr.contains("+ "), "{args:?}: nothing ran: {stderr}");
        assert!(!out_dir.exists(), "{args:?}: no results folder");
    }
}
