"""backtesting.py's SmaCross(10, 20) on a backtesting.py-layout CSV: its trades and its speed.

Run by `cargo xtask compare-backtesting-py` in a throwaway venv holding backtesting==0.6.6 (see
the README's Performance section); it needs nothing but backtesting.py and its dependencies.

The strategy is the one of backtesting.py's README: on a cross of the 10-bar over the 20-bar
simple moving average of closes, `position.close()` then `buy()` (or `sell()` on the opposite
cross). Settings that make its fills the ones `sim-worker run --fee-bps 0 --slippage-bps 0`
makes: `trade_on_close=True` (an order placed in `next()` fills at the close of that same bar,
and the trade's time is that bar's index), `commission=0`, no spread, `exclusive_orders=False`
(the explicit `position.close()` closes), `hedging=False`, `finalize_trades=False` (the trade
still open at the end stays open, as in sim-worker's ledger).

Writes (with --trades) one line per trade, oldest first, with the bar *open* times of the CSV's
index as backtesting.py reports them:
    side,entry_time,entry_price,exit_time,exit_price
the open trade last with empty exit fields; prices as the CSV writes them (repr of the float
read back from the CSV, which is the CSV's text for every price in the file). With --serve it
prints one JSON line {"bars": ..., "versions": {...}} once a warm-up call ran (first-call
imports and caches are not the backtest), then times one `Backtest.run()` call per line it reads
on stdin (the backtest only: not the interpreter's start, the imports or reading the CSV) and
prints its seconds on a line of its own, until stdin ends: the comparison interleaves these
calls with sim-worker's runs, so that a host whose speed drifts over the minutes slows both
sides alike.
"""

import argparse
import json
import sys
import time
import warnings

import backtesting
import numpy
import pandas as pd
from backtesting import Backtest, Strategy
from backtesting.lib import crossover


def sma(values, n):
    """Simple moving average of the last n values (backtesting.test.SMA)."""
    return pd.Series(values).rolling(n).mean()


class SmaCross(Strategy):
    n1 = 10
    n2 = 20

    def init(self):
        close = self.data.Close
        self.sma1 = self.I(sma, close, self.n1)
        self.sma2 = self.I(sma, close, self.n2)

    def next(self):
        if crossover(self.sma1, self.sma2):
            self.position.close()
            self.buy()
        elif crossover(self.sma2, self.sma1):
            self.position.close()
            self.sell()


def backtest(data):
    return Backtest(
        data,
        SmaCross,
        cash=10_000,
        commission=0.0,
        spread=0.0,
        trade_on_close=True,
        exclusive_orders=False,
        hedging=False,
        finalize_trades=False,
    )


def price(x):
    return repr(float(x))


def stamp(t):
    return pd.Timestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def versions():
    return {
        "python": sys.version.split()[0],
        "backtesting": backtesting.__version__,
        "pandas": pd.__version__,
        "numpy": numpy.__version__,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bars", required=True, help="CSV in backtesting.py's layout")
    ap.add_argument("--trades", help="write the trades here")
    ap.add_argument(
        "--serve",
        action="store_true",
        help="time one Backtest.run() call per line read on stdin, printing its seconds",
    )
    args = ap.parse_args()

    data = pd.read_csv(args.bars, index_col=0, parse_dates=True)
    warnings.simplefilter("ignore")  # "Some trades remain open ..." is expected: see above.

    if args.trades:
        stats = backtest(data).run()
        rows = []
        for t in stats._trades.itertuples():
            side = "long" if t.Size > 0 else "short"
            rows.append(
                f"{side},{stamp(t.EntryTime)},{price(t.EntryPrice)},"
                f"{stamp(t.ExitTime)},{price(t.ExitPrice)}"
            )
        for t in stats._strategy.trades:  # still open at the end
            side = "long" if t.size > 0 else "short"
            rows.append(f"{side},{stamp(t.entry_time)},{price(t.entry_price)},,")
        with open(args.trades, "w", encoding="utf-8", newline="\n") as f:
            f.write("side,entry_time,entry_price,exit_time,exit_price\n")
            f.write("".join(r + "\n" for r in rows))

    if args.serve:
        bt = backtest(data)
        bt.run()  # warm: first-call imports and caches are not the backtest
        print(json.dumps({"bars": len(data), "versions": versions()}), flush=True)
        for _ in sys.stdin:
            start = time.perf_counter()
            bt.run()
            print(repr(time.perf_counter() - start), flush=True)


if __name__ == "__main__":
    main()
