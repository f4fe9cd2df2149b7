//! `cargo xtask bench`: tick-to-trade through the lab, one path or both side by side.
use std::{
    process::Command,
    sync::{Arc, atomic::Ordering},
};

use anyhow::{Context as _, bail};
use report::{Bench, Conditions, Measured};
use results::FloorReport;

use crate::{
    lab::{Ends, Options, PathChoice, Row, session::Session},
    sockperf,
    util::{exec_until, succeeded},
};

/// The tick-to-trade ratios shown under the tables, where both rows were measured: each
/// compares rows against the same exchange side (the kernel-UDP exchange for xdp, udp,
/// trigger, trigger-block and reflect; the AF_XDP exchange for xdp-bypass and reflect-bypass),
/// so the harness's own cost is the same on both sides of the ratio.
const RATIOS: [(Row, Row); 7] = [
    (Row::XDP, Row::UDP),
    (Row::XDP, Row::Reflect),
    (Row::UDP, Row::Reflect),
    (Row::XDP, Row::TRIGGER),
    (Row::TRIGGER, Row::Reflect),
    (Row::TRIGGER_BLOCK, Row::Reflect),
    (Row::XdpBypass, Row::ReflectBypass),
];

/// The CPU floor's duration when the first run's is unknown, and the bounds on it: long enough
/// for a tail, short enough not to double a long soak's time.
const FLOOR_SECONDS_DEFAULT: f64 = 1.0;
const FLOOR_SECONDS_MIN: f64 = 0.5;
const FLOOR_SECONDS_MAX: f64 = 60.0;

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    if o.isolate && o.no_pin {
        bail!(
            "--isolate with --no-pin: an unpinned trader would be started from xtask's CPUs and \
             stay off the isolated one; pin it (drop --no-pin) or don't isolate"
        );
    }
    if !o.no_pin {
        crate::lab::check_cpus(o.trader_cpu, o.replay_cpu)?;
    }
    let rows = o.lab_rows();
    for choice in &o.paths {
        if let PathChoice::Path(p) | PathChoice::Row(p, _) = *choice
            && o.skips(Row::Path(p, None))
        {
            let modes: Vec<&str> = p.spec().modes.iter().map(|m| m.as_str()).collect();
            eprintln!(
                "note: no {p} rows with --xdp-mode {}: --path {p} runs in XDP mode {} only",
                o.xdp_mode,
                modes.join(" or ")
            );
        }
    }
    if o.floors && o.reads_a_book() {
        eprintln!(
            "note: no reflect rows: the reflector answers a packet whose first message is a \
             Trade (the ticker's), and a book's prints (--symbols) are Order Executed \
             messages it doesn't read"
        );
    }
    for &orders in o.orders.iter().filter(|x| x.is_tcp()) {
        for choice in &o.paths {
            if let PathChoice::Path(p) | PathChoice::Row(p, _) = *choice
                && !rows.iter().any(|(r, _)| *r == Row::Tcp(p, orders))
            {
                if o.skips(Row::Tcp(p, orders)) && o.reads_a_book() {
                    eprintln!(
                        "note: no {p}+{orders} row: the TCP trigger's segment is armed for the \
                         ticker's one-trade packets, not a book's prints (--symbols)"
                    );
                    continue;
                }
                let on: Vec<String> = rows_over(orders).iter().map(|p| p.to_string()).collect();
                eprintln!(
                    "note: no {p}+{orders} row: --orders {orders} runs on the paths with a row \
                     over it in the path table: {} (and with the trader waiting as --wait says)",
                    on.join(", ")
                );
            }
        }
    }
    let (_, first) = *rows.first().context(
        "no path to run in this XDP mode (the trigger path alone needs --xdp-mode native)",
    )?;
    let session = Session::start(&o, "bench", first)?;
    let stop = Arc::clone(&session.stop);
    // Restored when dropped: after the runs, on an error and after Ctrl-C alike.
    let isolation = if o.isolate {
        Some(crate::lab::session::isolate(
            o.trader_cpu,
            tuning::isolate::Scope::Everything,
        )?)
    } else {
        None
    };
    let mut measured = Vec::new();
    // Whatever fails, what was measured before it is reported; the failure is returned after.
    let mut failure = measure_lab_rows(&o, &session, &rows, &mut measured).err();
    let mut cpu_floor = None;
    if failure.is_none() && o.floors && !session.stopped() {
        match measure_cpu_floor(&o, &session, &measured) {
            Ok(f) => cpu_floor = Some(f),
            Err(e) => failure = Some(e.context(format!("{} failed", Row::CpuFloor.run_name()))),
        }
    }
    let mut reference = None;
    if failure.is_none() && o.sockperf > 0 && !session.stopped() {
        match sockperf::ping_pong(session.lab.config(), o.sockperf, o.trader_cpu, o.replay_cpu) {
            Ok(v) => reference = Some(v),
            Err(e) => eprintln!("warning: no sockperf reference: {e:#}"),
        }
    }
    let out = session.out.clone();
    // A failed restore is reported after the results are written, never instead of them.
    let mut restore_failure = None;
    if let Some(iso) = isolation {
        match iso.restore() {
            Ok(()) => eprintln!("isolation restored"),
            Err(e) => restore_failure = Some(e.context("restoring the isolated CPU")),
        }
    }
    session.finish();
    if !measured.is_empty() {
        let bench = Bench {
            conditions: &conditions(&o),
            machine: &results::Machine::read(),
            measured: &measured,
            sockperf: reference.as_ref(),
            cpu_floor: cpu_floor.as_ref(),
            ratios: &RATIOS.map(|(a, b)| (a.as_str(), b.as_str())),
            readiness: &crate::doctor::summary(o.trader_cpu),
        };
        print!("{}", report::write(&out, &bench)?);
        eprintln!("results in {}", out.display());
    }
    if let Some(e) = failure.or(restore_failure) {
        return Err(e);
    }
    if measured.is_empty() {
        bail!("nothing was measured");
    }
    if o.strict {
        strict(&measured)?;
    }
    if stop.load(Ordering::Relaxed) {
        bail!(
            "interrupted; partial results (if any) are in {}",
            out.display()
        );
    }
    Ok(())
}

/// Runs each lab row in turn and reads its reports back, until one fails or a signal comes.
fn measure_lab_rows(
    o: &Options,
    session: &Session,
    rows: &[(Row, Ends)],
    measured: &mut Vec<Measured>,
) -> anyhow::Result<()> {
    for &(row, ends) in rows {
        if session.stopped() {
            break;
        }
        let one = || -> anyhow::Result<Measured> {
            let run = session.run(o, ends, row.as_str())?;
            Ok(Measured {
                row: row.as_str(),
                path: ends.trader,
                udp_orders: udp_orders(row),
                replay: run.replay()?,
                trader: run.trader()?,
                hgrm: run.hgrm,
            })
        };
        measured.push(one().with_context(|| format!("{} failed", row.run_name()))?);
    }
    Ok(())
}

/// The paths with a bench row over `orders` (the trader waiting as `--wait` says), in the
/// path table's order.
fn rows_over(orders: paths::Orders) -> Vec<paths::TraderPath> {
    paths::PathSpec::select(|s| s.row(None, orders).is_some())
}

/// The row a TCP-orders row's cost is measured against: the same path's, its orders over UDP.
fn udp_orders(row: Row) -> Option<&'static str> {
    match row {
        Row::Tcp(path, _) => Some(Row::Path(path, None).as_str()),
        _ => None,
    }
}

/// What the report says of the options every row shared.
fn conditions(o: &Options) -> Conditions {
    Conditions {
        source: o.source.clone(),
        count: o.count,
        rate: o.rate,
        burst: o.burst.map(|b| b.to_string()),
        batch: o.batch,
        n: o.n,
        xdp_mode: o.xdp_mode,
        wait: o.wait,
        trader_cpu: o.trader_cpu,
        replay_cpu: o.replay_cpu,
        trader_args: o.trader_args.clone(),
        isolate: o.isolate,
        xdp_stages: o.xdp_stages,
    }
}

/// The CPU floor, as long as the first lab run (within bounds), so its tail is the machine's
/// jitter on the same time scale as the paths' tails.
fn measure_cpu_floor(
    o: &Options,
    session: &Session,
    measured: &[Measured],
) -> anyhow::Result<FloorReport> {
    let json = session.out.join("cpu-floor.json");
    let seconds = measured
        .first()
        .map_or(FLOOR_SECONDS_DEFAULT, |m| m.replay.send_seconds)
        .clamp(FLOOR_SECONDS_MIN, FLOOR_SECONDS_MAX);
    let options = floor::Options {
        cpus: vec![o.replay_cpu, o.trader_cpu],
        // Not rendered: --seconds sets the length.
        iterations: 1,
        // To a tenth of a second: the floor's own run needs no finer length.
        seconds: Some((seconds * 10.0).round() / 10.0),
        json_out: Some(json.clone()),
        hgrm_out: Some(session.out.join("cpu-floor.hgrm")),
    };
    let mut floor = Command::new(&session.bins.floor);
    floor.args(options.to_args());
    let status = exec_until(&mut floor, &session.stop)?;
    succeeded(&floor, status)?;
    Ok(results::read(&json)?)
}

/// `--strict`: the report's verdict has no problem (every run got every expected order and
/// lost no tick, every strategy run kept parity, no frame failed its XDP redirect).
fn strict(measured: &[Measured]) -> anyhow::Result<()> {
    let bad: Vec<String> = measured
        .iter()
        .flat_map(|m| report::problems(m.row, &m.replay, &m.trader))
        .collect();
    if !bad.is_empty() {
        bail!("strict: {}", bad.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use paths::{Rate, TraderPath, Wait};

    use super::*;

    trait HelpText {
        fn command_for_help() -> String;
    }

    impl<T: clap::CommandFactory> HelpText for T {
        fn command_for_help() -> String {
            T::command().render_long_help().to_string()
        }
    }

    #[test]
    fn rows_spell_alike_in_tables_and_json() {
        for row in Row::all() {
            assert_eq!(
                serde_json::to_string(&row).unwrap(),
                format!("\"{}\"", row.as_str())
            );
            assert_eq!(row.to_string(), row.as_str());
        }
    }

    /// The rows the report treats apart by name are these rows, and the report's fixtures
    /// compare the rows the bench does.
    #[test]
    fn the_reports_rows_are_named_as_the_bench_names_them() {
        use report::row;
        for (name, r) in [
            (row::REFLECT, Row::Reflect),
            (row::CPU_FLOOR, Row::CpuFloor),
            (row::SOCKPERF, Row::Sockperf),
        ] {
            assert_eq!(r.as_str(), name);
        }
        let ratios = RATIOS.map(|(a, b)| (a.as_str(), b.as_str()));
        assert_eq!(ratios, report::fixtures::RATIOS);
        let tcp = Row::Tcp(TraderPath::Udp, paths::Orders::TcpKernel);
        assert_eq!(udp_orders(tcp), Some("udp"));
        assert_eq!(udp_orders(Row::UDP), None);
    }

    /// The note for a path without a row over a TCP transport names those with one, from the
    /// table: what it said by hand before.
    #[test]
    fn the_paths_with_rows_over_each_transport_come_from_the_table() {
        use paths::Orders;
        assert_eq!(
            rows_over(Orders::TcpXdp),
            [TraderPath::Xdp, TraderPath::Trigger]
        );
        assert_eq!(
            rows_over(Orders::TcpKernel),
            [TraderPath::Xdp, TraderPath::Udp]
        );
    }

    /// report.md's conditions and report.json's `options` are the bench's options.
    #[test]
    fn the_reports_conditions_are_the_options() {
        let o = Options {
            count: None,
            source: "gbm:42:150000".parse().unwrap(),
            ..Options::trial(1, netns::PREFIX, None, true)
        };
        assert_eq!(conditions(&o), report::fixtures::conditions());
        let o = Options {
            isolate: true,
            xdp_stages: Some(paths::XdpStages::Run),
            trader_args: vec!["--mlock".into()],
            ..o
        };
        let c = conditions(&o);
        assert!(c.isolate && c.xdp_stages == Some(paths::XdpStages::Run));
        assert_eq!(c.trader_args, ["--mlock"]);
    }

    #[test]
    fn floors_add_the_reflector_against_both_exchanges_and_the_bypass_harness() {
        let mut o = Options::trial(1000, netns::PREFIX, None, true);
        o.floors = true;
        let rows: Vec<Row> = o.lab_rows().into_iter().map(|(r, _)| r).collect();
        assert_eq!(
            rows,
            [
                Row::XDP,
                Row::UDP,
                Row::Reflect,
                Row::XdpBypass,
                Row::ReflectBypass
            ]
        );
        let (_, ends) = o.lab_rows()[4];
        assert_eq!(
            (ends.trader, ends.exchange, ends.expect()),
            (
                TraderPath::Reflect,
                paths::ExchangeIo::Xdp,
                paths::Expect::Every
            )
        );
        o.paths = vec![PathChoice::Path(TraderPath::Udp)];
        o.floors = false;
        let rows: Vec<Row> = o.lab_rows().into_iter().map(|(r, _)| r).collect();
        assert_eq!(rows, [Row::UDP]);
    }

    #[test]
    fn paths_come_in_the_order_given_once_each_and_trigger_adds_its_blocking_row() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let rows = |line: &[&str]| -> Vec<Row> {
            let cli =
                Cli::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap();
            cli.o.lab_rows().into_iter().map(|(r, _)| r).collect()
        };
        assert_eq!(
            rows(&[]),
            [Row::XDP, Row::UDP, Row::TRIGGER, Row::TRIGGER_BLOCK]
        );
        assert_eq!(
            rows(&["--path", "xdp,udp,trigger"]),
            [Row::XDP, Row::UDP, Row::TRIGGER, Row::TRIGGER_BLOCK]
        );
        assert_eq!(
            rows(&["--path", "trigger,both,xdp"]),
            [Row::TRIGGER, Row::TRIGGER_BLOCK, Row::XDP, Row::UDP]
        );
        assert_eq!(
            rows(&["--path", "trigger", "--wait", "block"]),
            [Row::TRIGGER_BLOCK]
        );
        assert_eq!(
            Row::TRIGGER_BLOCK.ends().and_then(|e| e.wait),
            Some(Wait::Block)
        );
        assert!(Cli::try_parse_from(["bench", "--path", "xdp,bogus"]).is_err());
        // Generic XDP: the trigger (native only) is left out.
        assert_eq!(rows(&["--xdp-mode", "skb"]), [Row::XDP, Row::UDP]);
    }

    /// A path is one entry in the path table: the tests' `dummy` (feature `dummy-path`, on in
    /// every test build) is a `--path` value with its own row, named as its entry says, with
    /// the right ends, and a row of report.json, without a line of the bench about it.
    #[test]
    fn a_path_added_to_the_table_is_a_bench_path_with_its_rows() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let cli = Cli::try_parse_from(["bench", "--path", "dummy,xdp"]).unwrap();
        let rows: Vec<(Row, Ends)> = cli.o.lab_rows();
        let dummy = Row::Path(TraderPath::Dummy, None);
        assert_eq!(rows[0].0, dummy);
        assert_eq!(rows[1].0, Row::XDP);
        assert_eq!(dummy.as_str(), "dummy");
        assert_eq!(rows[0].1, Ends::kernel_exchange(TraderPath::Dummy));
        assert!(Row::all().any(|r| r == dummy));
        assert_eq!(
            serde_json::from_str::<Row>(&serde_json::to_string(&dummy).unwrap()).unwrap(),
            dummy
        );
        // Its entry takes no XDP program, so generic XDP doesn't leave it out.
        let skb = Cli::try_parse_from(["bench", "--path", "dummy", "--xdp-mode", "skb"]).unwrap();
        assert_eq!(skb.o.lab_rows().len(), 1);
        let help = Cli::command_for_help();
        assert!(help.contains("dummy"), "{help}");
    }

    #[test]
    fn the_help_shows_the_defaults_as_typed() {
        use clap::CommandFactory as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let help = Cli::command().render_long_help().to_string();
        for default in [
            "[default: gbm:42:150000]",
            "[default: 20k]",
            "[default: spin]",
        ] {
            assert!(help.contains(default), "{default} not in\n{help}");
        }
        let o = <Cli as clap::Parser>::try_parse_from(["x", "--rate", "1.5M", "--wait", "block"])
            .unwrap()
            .o;
        assert_eq!((o.rate, o.wait), (Rate::PerSec(1.5e6), Wait::Block));
        assert!(<Cli as clap::Parser>::try_parse_from(["x", "--rate", "fast"]).is_err());
    }
}
