//! `cargo xtask doctor`: is this machine set up for low latency?
use tuning::doctor::{Finding, Machine, Status, check, render};

/// Which CPU, and how to print.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// The latency-critical CPU (the trader's; `bench --trader-cpu`).
    #[arg(long, default_value_t = 1)]
    pub(crate) cpu: usize,
    /// JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    let findings = check(&Machine::live(), o.cpu);
    if o.json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
        return Ok(());
    }
    print!("{}", render(&findings));
    let warn = findings.iter().filter(|f| f.status == Status::Warn).count();
    println!(
        "\n{warn} of {} findings cost latency on CPU {}; boot-time ones (isolcpus, nohz_full, \
         rcu_nocbs) need a reboot; `bench --isolate` moves tasks, unbound workqueues and IRQs off \
         the CPU and restores them (THP, the watchdog and timer migration are yours to set).",
        findings.len(),
        o.cpu
    );
    Ok(())
}

/// The findings as one line each, for a report's conditions.
pub(crate) fn summary(cpu: usize) -> Vec<String> {
    check(&Machine::live(), cpu)
        .iter()
        .map(Finding::summary)
        .collect()
}

/// The machine in one phrase: CPU model and CPU count.
pub(crate) fn machine() -> String {
    let m = results::Machine::read();
    format!("{} ({} CPUs)", m.cpu, m.cores)
}
