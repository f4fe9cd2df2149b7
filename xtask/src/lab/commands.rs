//! `netns-up`, `netns-down`, `netns-status`.
use anyhow::Context as _;
use netns::{Found, Lab, LabConfig};

/// Which lab.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Lab name; the namespaces are `<name>-ex` (exchange) and `<name>-tr` (trader).
    #[arg(long, default_value = netns::PREFIX)]
    pub(crate) name: String,
}

fn config(name: &str) -> anyhow::Result<LabConfig> {
    Ok(LabConfig::new(name)?)
}

pub(crate) fn up(Options { name }: Options) -> anyhow::Result<()> {
    let config = config(&name)?;
    let lab = Lab::up(config).context("failed to bring the lab up")?;
    let found = lab.found();
    let config = lab.persist();
    match found {
        Found::Nothing => eprintln!("lab {} is up", config.name),
        Found::Intact => eprintln!("lab {} was already up; nothing changed", config.name),
        Found::Repaired => eprintln!("lab {} was incomplete; rebuilt it", config.name),
    }
    print!("{}", netns::status(&config)?);
    Ok(())
}

pub(crate) fn down(Options { name }: Options) -> anyhow::Result<()> {
    let config = config(&name)?;
    // What a killed `--isolate` run left goes back with the lab.
    if let Some(note) = tuning::isolate::restore_leftover(&tuning::isolate::Paths::live())? {
        eprintln!("{note}");
    }
    if let Some(note) = tuning::idle::restore_leftover(&tuning::idle::Paths::live())? {
        eprintln!("{note}");
    }
    if netns::down(&config).context("failed to remove the lab")? {
        eprintln!("lab {} removed", config.name);
    } else {
        eprintln!("lab {} was not there; nothing to do", config.name);
    }
    Ok(())
}

pub(crate) fn status(Options { name }: Options) -> anyhow::Result<()> {
    let config = config(&name)?;
    print!("{}", netns::status(&config)?);
    let others: Vec<String> = netns::project_namespaces()
        .into_iter()
        .filter(|n| *n != config.exchange_ns() && *n != config.trader_ns())
        .collect();
    if !others.is_empty() {
        println!("other namespaces of this project: {}", others.join(" "));
    }
    Ok(())
}
