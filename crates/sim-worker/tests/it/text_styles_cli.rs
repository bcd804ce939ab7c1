//! The text styles of `types::text` where a person reads `sim-worker`: the result and progress
//! lines of `run`, the `ab` table, the `ledger` summary and `report.html`. Each expected string
//! is written out: money as `-$1,234.50`, percentages as `23.33%`, ratios with two decimals,
//! prices at six significant digits.

use std::path::Path;

use crate::common::{repo, sim};

/// `run` of the example skill over the first walk-forward window of the docs (w01).
fn run_w01(out: &Path) -> (String, String) {
    let (code, stdout, stderr) = sim(&[
        "run",
        "--skill",
        &repo("examples/skills/eurusd-sma-cross.yaml"),
        "--bars",
        &format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
        "--from",
        "2017-04-19 10:00",
        "--to",
        "2017-05-26 03:00",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    (stdout, stderr)
}

/// Every line the table names is printed whole, in the styles.
fn assert_lines(text: &str, want: &[&str]) {
    for line in want {
        assert!(
            text.lines().any(|l| l == *line),
            "missing line {line:?} in:\n{text}"
        );
    }
}

#[test]
fn command_output_prints_money_percentages_and_ratios_in_the_text_styles() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = run_w01(&dir.path().join("w01"));
    assert_lines(
        &stdout,
        &[
            "642 ticks 2017-04-19 10:00:00 UTC .. 2017-05-26 03:00:00 UTC · 30 trades (win rate \
           23.33%) · net PnL -$190.58 (gross -$29.18, fees $161.40) · max drawdown 3.1% · \
           Sharpe -4.11 · 6 notes",
        ],
    );
    // Without a terminal, the progress lines (signed money).
    assert_lines(
        &stderr,
        &["tick 642/642 at 2017-05-26 03:00:00 UTC · 30 trades · PnL -$183.77 · 6 notes"],
    );

    // The A/B table: one style per row.
    let ab = dir.path().join("ab");
    let (code, stdout, stderr) = sim(&[
        "ab",
        "--skill",
        &repo("examples/skills/eurusd-sma-cross.yaml"),
        "--bars",
        &format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
        "--to",
        "2017-05-10",
        "--b-memory",
        "off",
        "--out",
        ab.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_lines(
        &stdout,
        &[
            "closed trades                          18                     18",
            "win rate                           11.11%                 11.11%",
            "net PnL                          -$293.33               -$293.33",
            "gross PnL                        -$195.32               -$195.32",
            "fees                               $98.01                 $98.01",
            "final equity                    $9,757.65              $9,757.65",
            "max drawdown                         3.1%                   3.1%",
            "Sharpe                              -8.78                  -8.78",
            "time in market                     89.74%                 89.74%",
            "cost                                $0.00                  $0.00",
        ],
    );

    // The ledger's summary: money at cents with thousands separators, not the raw decimals.
    let fills = dir.path().join("fills.csv");
    std::fs::write(
        &fills,
        "id,time,symbol,side,qty,price,fee_usd\n\
         f1,2026-06-04T10:00:00Z,BTC,buy,1,65200,12.5\n\
         f2,2026-06-04T11:00:00Z,BTC,sell,1,63965.5,0.004\n",
    )
    .unwrap();
    let (code, _, stderr) = sim(&["ledger", "from-fills", "--fills", fills.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.ends_with(
            "2 fills → 1 trades (1 closed, 0 open); realized PnL -$1,234.50 gross, fees \
             $12.50, net -$1,247.00\n"
        ),
        "{stderr}"
    );
}

#[test]
fn report_html_prints_money_percentages_and_prices_in_the_text_styles() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w01");
    run_w01(&out);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for (label, value) in [
        ("Starting equity", "$10,000.00"),
        ("Final equity", "$9,816.23"),
        ("Total return", "-$183.77 (-1.84%)"),
        ("Win rate", "23.33%"),
        (
            "Realized PnL",
            "-$190.58 net = -$29.18 gross − $161.40 fees",
        ),
        ("Unrealized PnL at the end", "$6.81"),
        ("Max drawdown", "$310.02 (3.1%)"),
        ("Sharpe (annualised per-tick returns)", "-4.11"),
        ("Model cost", "$0.00"),
    ] {
        let row = format!("<tr><th class=\"l\">{label}</th><td>{value}</td></tr>");
        assert!(html.contains(&row), "{row} in the summary");
    }
    // The first trade: prices at six significant digits, money at cents.
    let first = "<tr><td>1</td><td class=\"l\">EURUSD</td><td class=\"l\">short</td>\
                 <td class=\"l\">2017-04-20T22:00:00Z</td><td>1.07148</td><td>$5,995.79</td>\
                 <td class=\"l\">2017-04-23T22:00:00Z</td><td>1.08991</td><td class=\"l\">flip</td>\
                 <td>-$103.11</td><td>$5.44</td><td class=\"neg\">-$108.55</td><td>$18.15</td>\
                 <td>-$107.14</td>";
    assert!(html.contains(first), "the first trade's row");
    // The charts' axis labels: money and a percentage, never a bare float.
    for label in [
        "$9,702.52",
        "$9,780.03",
        "$9,857.53",
        "$9,935.03",
        "$10,012.54",
        "0%",
        "-3.1%",
    ] {
        let text = format!("text-anchor=\"end\" fill=\"#667\">{label}</text>");
        assert!(html.contains(&text), "axis label {label}");
    }
}
