//! `book-replay FILE`: a raw ITCH 5.0 file (or `.gz`) through the order book, timed. See
//! `--help`, and `cargo xtask book`, which runs it beside itch-book.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::path::PathBuf;
#[cfg(test)]
use {engine as _, tempfile as _};
use {flate2 as _, hdrhistogram as _, hotpath as _, market as _, serde as _, wire as _};

use anyhow::Context as _;
use clap::Parser;
use market_tools::{ReplayOptions, render, replay};

/// Replays a raw ITCH 5.0 file (2-byte big-endian length before each message, as NASDAQ's day
/// files; or its .gz, read as a stream) through the order book: msgs/s, ns per message (mean,
/// and each message timed alone: p50/p99/p99.9, overall and per type), the memory it took,
/// what the book refused (with offsets), and every symbol's messages, prints, last price and
/// best bid and offer.
#[derive(Debug, Parser)]
#[command(name = "book-replay", version)]
struct Args {
    /// The file: raw ITCH 5.0, or gzip by its .gz name.
    file: PathBuf,
    /// Only these symbols in the summary (comma-separated); with --prints-out, whose prints to
    /// write.
    #[arg(long, value_delimiter = ',')]
    symbols: Vec<String>,
    /// Write the summary as JSON here.
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// Write one CSV per --symbols symbol of its prints (`price,shares`, Price(4) integers, in
    /// order) into this folder.
    #[arg(long, requires = "symbols")]
    prints_out: Option<PathBuf>,
    /// Stop after this many messages.
    #[arg(long)]
    limit: Option<u64>,
    /// The most orders live at once that the book holds without growing.
    #[arg(long, default_value_t = book::Config::default().live_orders)]
    live_orders: usize,
    /// Skip the second pass (each message timed alone): msgs/s and the mean only.
    #[arg(long)]
    no_per_message: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| {
        let Args {
            file,
            symbols,
            json_out,
            prints_out,
            limit,
            live_orders,
            no_per_message,
            quiet,
        } = Args::parse();
        if let Some(j) = &json_out {
            paths::cli::check_writable("--json-out", j)?;
        }
        let summary = replay(&ReplayOptions {
            file,
            symbols,
            prints_out,
            limit,
            book: book::Config {
                live_orders,
                ..book::Config::default()
            },
            per_message: !no_per_message,
            progress: !quiet,
            chunk_bytes: market_tools::CHUNK,
        })?;
        print!("{}", render(&summary));
        if let Some(j) = json_out {
            let text = serde_json::to_string_pretty(&summary)?;
            std::fs::write(&j, text).with_context(|| format!("failed to write {}", j.display()))?;
        }
        Ok(())
    })
}
