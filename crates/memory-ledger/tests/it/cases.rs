//! Hand-computed ledger cases, one per rule of the crate docs. The arithmetic is written out
//! next to every asserted value; all values are exact decimals.

use crate::common;

use std::collections::BTreeMap;

use common::*;
use memory_ledger::{
    FillLeg, LedgerChanges, LedgerError, LedgerState, Proposals, REASON_MAX_CHARS, trade_id,
};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use types::{CloseKind, OrderSide::*, RegimeTag, Side, TradeRecord, TradeStatus};

fn fills_only(
    state: &mut LedgerState,
    fills: &[types::Fill],
    proposals: &Proposals,
) -> LedgerChanges {
    let regimes = BTreeMap::from([("BTC".to_owned(), RegimeTag::TrendingUp)]);
    state.apply_fills(fills, proposals, &regimes).unwrap()
}

fn only_row(changes: &LedgerChanges) -> &TradeRecord {
    assert_eq!(changes.rows.len(), 1, "{changes:#?}");
    &changes.rows[0].row
}

fn proposals() -> Proposals {
    Proposals::from([
        (
            snap(1),
            proposal("breakout above prior swing high", Some(dec!(3))),
        ),
        (snap(2), proposal("add on retest", Some(dec!(4)))),
        (snap(3), proposal("take half off into resistance", None)),
        (snap(4), proposal("stop hit", None)),
    ])
}

#[test]
fn open_add_partial_close_full_close() {
    let props = proposals();
    let mut s = LedgerState::new(scope());

    // Open: buy 2 BTC @ 100, fee 0.20.
    let c = fills_only(
        &mut s,
        &[fill(
            "f1",
            "BTC",
            Buy,
            dec!(2),
            dec!(100),
            dec!(0.20),
            0,
            Some(snap(1)),
        )],
        &props,
    );
    let r = only_row(&c);
    assert!(c.rows[0].inserted);
    assert_eq!(r.id, trade_id(DEPLOYMENT, "BTC", "f1"));
    assert_eq!((r.side, r.status), (Side::Long, TradeStatus::Open));
    assert_eq!(r.entry_price, dec!(100));
    assert_eq!(r.entry_size_usd, dec!(200)); // 2 × 100
    assert_eq!((r.opened_qty, r.open_qty), (dec!(2), dec!(2)));
    assert_eq!(r.fees_usd, dec!(0.20));
    assert_eq!(
        r.entry_reason.as_deref(),
        Some("breakout above prior swing high")
    );
    assert_eq!(r.entry_leverage, Some(dec!(3)));
    assert_eq!(r.entry_snapshot_id, Some(snap(1)));
    assert_eq!(r.entry_regime_tag, Some(RegimeTag::TrendingUp));
    assert_eq!((r.skill_id, r.skill_version), (SKILL, 3));
    assert_eq!(
        (r.mfe_usd, r.mae_usd, r.realized_pnl_usd),
        (dec!(0), dec!(0), dec!(0))
    );
    assert_eq!(c.fill_links.len(), 1);
    assert_eq!(c.fill_links[0].leg, FillLeg::Open);

    // Add: buy 1 @ 130, fee 0.10 → average cost (100 × 2 + 130 × 1) / 3 = 330 / 3 = 110.
    let c = fills_only(
        &mut s,
        &[fill(
            "f2",
            "BTC",
            Buy,
            dec!(1),
            dec!(130),
            dec!(0.10),
            30,
            Some(snap(2)),
        )],
        &props,
    );
    let r = only_row(&c);
    assert!(!c.rows[0].inserted);
    assert_eq!(r.entry_price, dec!(110));
    assert_eq!(r.entry_size_usd, dec!(330)); // 200 + 130
    assert_eq!((r.opened_qty, r.open_qty), (dec!(3), dec!(3)));
    assert_eq!(r.fees_usd, dec!(0.30)); // 0.20 + 0.10
    // The entry keeps the first proposal's reason, snapshot and leverage.
    assert_eq!(r.entry_snapshot_id, Some(snap(1)));
    assert_eq!(r.entry_leverage, Some(dec!(3)));

    // Partial close: sell 1 @ 120, fee 0.12 → realized (120 − 110) × 1 = +10; entry stays 110.
    let c = fills_only(
        &mut s,
        &[fill(
            "f3",
            "BTC",
            Sell,
            dec!(1),
            dec!(120),
            dec!(0.12),
            60,
            Some(snap(3)),
        )],
        &props,
    );
    let r = only_row(&c);
    assert_eq!(r.status, TradeStatus::Open);
    assert_eq!(r.realized_pnl_usd, dec!(10));
    assert_eq!(r.entry_price, dec!(110));
    assert_eq!(r.open_qty, dec!(2));
    assert_eq!(r.exit_price, Some(dec!(120)));
    assert_eq!(r.exit_size_usd, dec!(120));
    assert_eq!(
        r.exit_reason.as_deref(),
        Some("take half off into resistance")
    );
    assert_eq!(r.fees_usd, dec!(0.42)); // 0.30 + 0.12
    assert_eq!(r.close_kind, None);
    assert_eq!(r.holding_minutes, None);
    assert_eq!(c.fill_links[0].leg, FillLeg::Close);

    // Full close: sell 2 @ 105, fee 0.21 → realized += (105 − 110) × 2 = −10 → total 0.
    // exit_price = (120 × 1 + 105 × 2) / 3 = 330 / 3 = 110. Held 10:00 → 11:30 = 90 minutes.
    let c = fills_only(
        &mut s,
        &[fill(
            "f4",
            "BTC",
            Sell,
            dec!(2),
            dec!(105),
            dec!(0.21),
            90,
            Some(snap(4)),
        )],
        &props,
    );
    let r = only_row(&c);
    assert_eq!(r.status, TradeStatus::Closed);
    assert_eq!(r.close_kind, Some(CloseKind::Signal));
    assert_eq!(r.realized_pnl_usd, dec!(0));
    assert_eq!(r.exit_price, Some(dec!(110)));
    assert_eq!(r.exit_size_usd, dec!(330)); // 120 + 210
    assert_eq!(r.open_qty, dec!(0));
    assert_eq!(r.opened_qty, dec!(3));
    assert_eq!(r.fees_usd, dec!(0.63)); // 0.42 + 0.21
    assert_eq!(r.holding_minutes, Some(dec!(90)));
    assert_eq!(r.exit_tick_at, Some(t(90)));
    assert_eq!(r.exit_reason.as_deref(), Some("stop hit"));
    assert_eq!(r.exit_snapshot_id, Some(snap(4)));
    assert!(!r.broker_reconciled);
    assert!(s.open_row("BTC").is_none());
}

#[test]
fn add_after_partial_close_keeps_broker_average_cost() {
    let mut s = LedgerState::new(scope());
    let fills = [
        fill("a", "BTC", Buy, dec!(2), dec!(100), dec!(0), 0, None),
        fill("b", "BTC", Sell, dec!(1), dec!(90), dec!(0), 1, None),
        fill("c", "BTC", Buy, dec!(1), dec!(110), dec!(0), 2, None),
        fill("d", "BTC", Sell, dec!(2), dec!(120), dec!(0), 3, None),
    ];
    let c = fills_only(&mut s, &fills, &Proposals::new());
    let r = only_row(&c);
    // open 2 @ 100; close 1 @ 90 → (90 − 100) × 1 = −10, 1 left at 100;
    // add 1 @ 110 → entry (100 × 1 + 110 × 1) / 2 = 105; close 2 @ 120 → (120 − 105) × 2 = +30.
    assert_eq!(r.realized_pnl_usd, dec!(20)); // −10 + 30
    assert_eq!(r.entry_price, dec!(105));
    assert_eq!(r.entry_size_usd, dec!(310)); // 200 + 110: Σ opening notional
    assert_eq!(r.opened_qty, dec!(3));
    // exit = (90 × 1 + 120 × 2) / 3 = 330 / 3 = 110
    assert_eq!(r.exit_price, Some(dec!(110)));
    // No snapshot on the closing fill: a fill we did not cause.
    assert_eq!(r.close_kind, Some(CloseKind::External));
}

#[test]
fn flip_splits_into_close_and_open_with_pro_rata_fee() {
    let props = Proposals::from([
        (
            snap(1),
            proposal("funding extreme, mean-revert", Some(dec!(2))),
        ),
        (snap(2), proposal("trend turned up", Some(dec!(3)))),
    ]);
    let mut s = LedgerState::new(scope());
    fills_only(
        &mut s,
        &[fill(
            "s1",
            "ETH",
            Sell,
            dec!(3),
            dec!(2000),
            dec!(0.6),
            0,
            Some(snap(1)),
        )],
        &props,
    );
    // Buy 5 @ 1900, fee 0.30: closing leg 3 (the open short), opening leg 2.
    let c = fills_only(
        &mut s,
        &[fill(
            "b1",
            "ETH",
            Buy,
            dec!(5),
            dec!(1900),
            dec!(0.30),
            45,
            Some(snap(2)),
        )],
        &props,
    );
    assert_eq!(c.rows.len(), 2);
    let (old, new) = (&c.rows[0], &c.rows[1]);
    assert!(!old.inserted && new.inserted);
    // Short closed: −1 × (1900 − 2000) × 3 = +300. Fee leg 0.30 × 3/5 = 0.18 → 0.6 + 0.18 = 0.78.
    assert_eq!(old.row.status, TradeStatus::Closed);
    assert_eq!(old.row.close_kind, Some(CloseKind::Flip));
    assert_eq!(old.row.realized_pnl_usd, dec!(300));
    assert_eq!(old.row.fees_usd, dec!(0.78));
    assert_eq!(old.row.exit_price, Some(dec!(1900)));
    assert_eq!(old.row.holding_minutes, Some(dec!(45)));
    assert_eq!(old.row.exit_reason.as_deref(), Some("trend turned up"));
    // New long 2 @ 1900 = $3,800, fee 0.30 − 0.18 = 0.12, named after the flip fill.
    assert_eq!(new.row.id, trade_id(DEPLOYMENT, "ETH", "b1"));
    assert_eq!(new.row.side, Side::Long);
    assert_eq!(
        (new.row.entry_price, new.row.open_qty),
        (dec!(1900), dec!(2))
    );
    assert_eq!(new.row.entry_size_usd, dec!(3800));
    assert_eq!(new.row.fees_usd, dec!(0.12));
    assert_eq!(new.row.entry_reason.as_deref(), Some("trend turned up"));
    assert_eq!(new.row.entry_leverage, Some(dec!(3)));
    assert_eq!((new.row.mfe_usd, new.row.mae_usd), (dec!(0), dec!(0)));
    // Links: the two legs sum to the fill (qty 3 + 2 = 5, fee 0.18 + 0.12 = 0.30).
    let legs: Vec<_> = c
        .fill_links
        .iter()
        .map(|l| (l.leg, l.qty, l.fee_usd, l.trade_id))
        .collect();
    assert_eq!(
        legs,
        vec![
            (FillLeg::Close, dec!(3), dec!(0.18), old.row.id),
            (FillLeg::Open, dec!(2), dec!(0.12), new.row.id)
        ]
    );
}

#[test]
fn flip_fee_rounding_puts_the_remainder_on_the_opening_leg() {
    let mut s = LedgerState::new(scope());
    fills_only(
        &mut s,
        &[fill("o", "BTC", Buy, dec!(1), dec!(100), dec!(0), 0, None)],
        &Proposals::new(),
    );
    // Sell 3 with fee 0.10: closing leg 1/3 → 0.0333…  rounded to 8 dp = 0.03333333;
    // opening leg 0.10 − 0.03333333 = 0.06666667. Sum exactly 0.10.
    let c = fills_only(
        &mut s,
        &[fill(
            "x",
            "BTC",
            Sell,
            dec!(3),
            dec!(100),
            dec!(0.10),
            1,
            None,
        )],
        &Proposals::new(),
    );
    assert_eq!(c.rows[0].row.fees_usd, dec!(0.03333333));
    assert_eq!(c.rows[1].row.fees_usd, dec!(0.06666667));
    assert_eq!(c.rows[0].row.fees_usd + c.rows[1].row.fees_usd, dec!(0.10));
}

#[test]
fn vanished_position_closes_external_at_last_bar_close() {
    let mut s = LedgerState::new(scope());
    // Tick 1 (10:00): buy 10 SOL @ 20, broker agrees, liquidation price 15.
    let mut pos = position("SOL", Side::Long, dec!(10), dec!(20), dec!(20));
    pos.liquidation_price = Some(dec!(15));
    let tick1 = Tick {
        at_minute: 0,
        positions: vec![pos],
        fills: vec![fill(
            "sol1",
            "SOL",
            Buy,
            dec!(10),
            dec!(20),
            dec!(0.05),
            0,
            Some(snap(1)),
        )],
        ..Tick::default()
    };
    s.apply_tick(tick1.input()).unwrap();
    // Tick 2 (11:00): the broker is flat, no fill. Bar 10:00–11:00 low 19 (liquidation 15 not
    // reached), close 21.5 → external close at 21.5: (21.5 − 20) × 10 = +15.
    let tick2 = Tick {
        at_minute: 60,
        bars: BTreeMap::from([(
            "SOL".to_owned(),
            vec![bar(0, dec!(20), dec!(22), dec!(19), dec!(21.5))],
        )]),
        ..Tick::default()
    };
    let c = s.apply_tick(tick2.input()).unwrap();
    let r = only_row(&c);
    assert_eq!(r.status, TradeStatus::Closed);
    assert_eq!(r.close_kind, Some(CloseKind::External));
    assert_eq!(r.exit_price, Some(dec!(21.5)));
    assert_eq!(r.realized_pnl_usd, dec!(15));
    assert_eq!(r.fees_usd, dec!(0.05)); // no fee for a close we did not see
    // The bar also set the excursions first: MFE (22 − 20) × 10 = 20, MAE (19 − 20) × 10 = −10.
    assert_eq!((r.mfe_usd, r.mae_usd), (dec!(20), dec!(-10)));
    assert!(r.broker_reconciled);
    assert_eq!(r.exit_reason, None);
    assert!(c.fill_links.is_empty());
}

#[test]
fn vanished_position_with_liquidation_price_crossed_is_a_liquidation() {
    let mut s = LedgerState::new(scope());
    let mut pos = position("SOL", Side::Long, dec!(10), dec!(20), dec!(20));
    pos.liquidation_price = Some(dec!(18));
    let tick1 = Tick {
        at_minute: 0,
        positions: vec![pos],
        fills: vec![fill(
            "sol1",
            "SOL",
            Buy,
            dec!(10),
            dec!(20),
            dec!(0),
            0,
            None,
        )],
        ..Tick::default()
    };
    s.apply_tick(tick1.input()).unwrap();
    // Bar low 17.9 ≤ liquidation 18 → liquidated at 18: (18 − 20) × 10 = −20.
    let tick2 = Tick {
        at_minute: 60,
        bars: BTreeMap::from([(
            "SOL".to_owned(),
            vec![bar(0, dec!(20), dec!(20.5), dec!(17.9), dec!(18.2))],
        )]),
        ..Tick::default()
    };
    let r = only_row(&s.apply_tick(tick2.input()).unwrap()).clone();
    assert_eq!(r.close_kind, Some(CloseKind::Liquidation));
    assert_eq!(r.exit_price, Some(dec!(18)));
    assert_eq!(r.realized_pnl_usd, dec!(-20));
}

#[test]
fn liquidation_fill_closes_as_liquidation() {
    let mut s = LedgerState::new(scope());
    fills_only(
        &mut s,
        &[fill(
            "o",
            "BTC",
            Sell,
            dec!(0.5),
            dec!(60000),
            dec!(0),
            0,
            Some(snap(1)),
        )],
        &proposals(),
    );
    let mut liq = fill("liq", "BTC", Buy, dec!(0.5), dec!(66000), dec!(3), 5, None);
    liq.liquidation = true;
    let c = fills_only(&mut s, &[liq], &proposals());
    let r = only_row(&c);
    // Short 0.5: −1 × (66000 − 60000) × 0.5 = −3000.
    assert_eq!(r.close_kind, Some(CloseKind::Liquidation));
    assert_eq!(r.realized_pnl_usd, dec!(-3000));
    assert_eq!(r.fees_usd, dec!(3));
    assert_eq!((r.exit_reason.as_deref(), r.exit_snapshot_id), (None, None));
}

#[test]
fn duplicate_fill_changes_nothing() {
    let mut s = LedgerState::new(scope());
    let f = fill("dup", "BTC", Buy, dec!(1), dec!(100), dec!(0.1), 0, None);
    let first = fills_only(&mut s, std::slice::from_ref(&f), &Proposals::new());
    assert_eq!(first.rows.len(), 1);
    let before: Vec<_> = s.open_rows().cloned().collect();
    // Again, and twice inside one batch.
    assert!(fills_only(&mut s, &[f.clone(), f.clone()], &Proposals::new()).is_empty());
    let after: Vec<_> = s.open_rows().cloned().collect();
    assert_eq!(before, after);
    assert_eq!(s.applied_fill_ids(), vec!["dup".to_owned()]);
    // A tick carrying it again with the broker agreeing: still nothing.
    let tick = Tick {
        at_minute: 1,
        positions: vec![position("BTC", Side::Long, dec!(1), dec!(100), dec!(100))],
        fills: vec![f],
        ..Tick::default()
    };
    assert!(s.apply_tick(tick.input()).unwrap().is_empty());
}

#[test]
fn restart_mid_trade_via_rebuild_gives_the_same_rows() {
    let props = proposals();
    let stream = [
        fill(
            "r1",
            "BTC",
            Buy,
            dec!(2),
            dec!(100),
            dec!(0.2),
            0,
            Some(snap(1)),
        ),
        fill(
            "r2",
            "BTC",
            Buy,
            dec!(1),
            dec!(130),
            dec!(0.1),
            10,
            Some(snap(2)),
        ),
        fill(
            "r3",
            "BTC",
            Sell,
            dec!(1),
            dec!(120),
            dec!(0.1),
            20,
            Some(snap(3)),
        ),
        fill(
            "r4",
            "BTC",
            Sell,
            dec!(2),
            dec!(105),
            dec!(0.2),
            30,
            Some(snap(4)),
        ),
    ];
    let mut straight = LedgerState::new(scope());
    let all = fills_only(&mut straight, &stream, &props);

    let mut before = LedgerState::new(scope());
    let first = fills_only(&mut before, &stream[..2], &props);
    // "Persist" and restart: the open rows and applied ids as stored.
    let open: Vec<TradeRecord> = first.rows.iter().map(|w| w.row.clone()).collect();
    let mut after = LedgerState::rebuild(scope(), open, before.applied_fill_ids()).unwrap();
    // Re-delivering the whole stream after the restart applies only r3 and r4.
    let rest = fills_only(&mut after, &stream, &props);
    assert_eq!(rest.fill_links.len(), 2);
    assert_eq!(all.rows.last().unwrap().row, rest.rows.last().unwrap().row);
    // Closed: (120 − 110) × 1 + (105 − 110) × 2 = 10 − 10 = 0.
    assert_eq!(rest.rows[0].row.realized_pnl_usd, dec!(0));
}

#[test]
fn unexplained_broker_position_opens_a_reconciled_row_and_sizes_follow_the_broker() {
    let mut s = LedgerState::new(scope());
    let regimes = BTreeMap::from([("DOGE".to_owned(), RegimeTag::Ranging)]);
    // The broker reports 1000 DOGE long @ 0.078 that no fill explains.
    let tick1 = Tick {
        at_minute: 0,
        positions: vec![position(
            "DOGE",
            Side::Long,
            dec!(1000),
            dec!(0.078),
            dec!(0.079),
        )],
        regimes: regimes.clone(),
        ..Tick::default()
    };
    let c = s.apply_tick(tick1.input()).unwrap();
    let r = only_row(&c);
    assert!(c.rows[0].inserted && r.broker_reconciled);
    assert_eq!(
        r.id,
        trade_id(DEPLOYMENT, "DOGE", &format!("broker@{}", t(0).to_rfc3339()))
    );
    assert_eq!((r.entry_price, r.open_qty), (dec!(0.078), dec!(1000)));
    assert_eq!(r.entry_size_usd, dec!(78)); // 1000 × 0.078
    assert_eq!(r.entry_leverage, Some(dec!(5)));
    assert_eq!(r.entry_regime_tag, Some(RegimeTag::Ranging));
    assert_eq!(r.entry_reason, None);
    // Next tick: broker says 1500 (500 more, no fill) → add 500 at the mark 0.080:
    // entry (0.078 × 1000 + 0.080 × 500) / 1500 = (78 + 40) / 1500 = 118 / 1500.
    let tick2 = Tick {
        at_minute: 60,
        positions: vec![position(
            "DOGE",
            Side::Long,
            dec!(1500),
            dec!(0.0787),
            dec!(0.080),
        )],
        ..Tick::default()
    };
    let r = only_row(&s.apply_tick(tick2.input()).unwrap()).clone();
    assert_eq!(r.entry_price, dec!(118) / dec!(1500));
    assert_eq!(r.open_qty, dec!(1500));
    // Then 1200 (300 fewer) → reduce 300 at the mark 0.081: (0.081 − 118/1500) × 300.
    let tick3 = Tick {
        at_minute: 120,
        positions: vec![position(
            "DOGE",
            Side::Long,
            dec!(1200),
            dec!(0.0787),
            dec!(0.081),
        )],
        ..Tick::default()
    };
    let r = only_row(&s.apply_tick(tick3.input()).unwrap()).clone();
    assert_eq!(r.status, TradeStatus::Open);
    assert_eq!(r.open_qty, dec!(1200));
    assert_eq!(
        r.realized_pnl_usd,
        (dec!(0.081) - dec!(118) / dec!(1500)) * dec!(300)
    );
    // Then the broker is short 200 @ 0.082: the long closes external at 0.082
    // ((0.082 − 118/1500) × 1200 more) and a reconciled short opens.
    let tick4 = Tick {
        at_minute: 180,
        positions: vec![position(
            "DOGE",
            Side::Short,
            dec!(200),
            dec!(0.082),
            dec!(0.082),
        )],
        ..Tick::default()
    };
    let c = s.apply_tick(tick4.input()).unwrap();
    assert_eq!(c.rows.len(), 2);
    assert_eq!(c.rows[0].row.close_kind, Some(CloseKind::External));
    assert_eq!(
        c.rows[0].row.realized_pnl_usd,
        (dec!(0.081) - dec!(118) / dec!(1500)) * dec!(300)
            + (dec!(0.082) - dec!(118) / dec!(1500)) * dec!(1200)
    );
    assert_eq!(
        (c.rows[1].row.side, c.rows[1].row.open_qty),
        (Side::Short, dec!(200))
    );
}

#[test]
fn fills_explaining_the_broker_need_no_reconciliation() {
    let mut s = LedgerState::new(scope());
    let tick = Tick {
        at_minute: 0,
        positions: vec![position(
            "BTC",
            Side::Short,
            dec!(0.3),
            dec!(65000),
            dec!(65010),
        )],
        fills: vec![
            fill("a", "BTC", Sell, dec!(0.1), dec!(64900), dec!(0), 0, None),
            fill("b", "BTC", Sell, dec!(0.2), dec!(65050), dec!(0), 0, None),
        ],
        ..Tick::default()
    };
    let c = s.apply_tick(tick.input()).unwrap();
    let r = only_row(&c);
    assert!(!r.broker_reconciled);
    // (64900 × 0.1 + 65050 × 0.2) / 0.3 = (6490 + 13010) / 0.3 = 19500 / 0.3 = 65000
    assert_eq!(r.entry_price, dec!(65000));
}

#[test]
fn excursions_from_closed_bars_since_entry_only() {
    let mut s = LedgerState::new(scope());
    let tick1 = Tick {
        at_minute: 60,
        positions: vec![position("BTC", Side::Long, dec!(2), dec!(100), dec!(100))],
        fills: vec![fill("e", "BTC", Buy, dec!(2), dec!(100), dec!(0), 60, None)],
        // The bar 10:00–11:00 is before the entry at 11:00: ignored (its low 50 never counts).
        bars: BTreeMap::from([(
            "BTC".to_owned(),
            vec![bar(0, dec!(90), dec!(101), dec!(50), dec!(100))],
        )]),
        ..Tick::default()
    };
    let c = s.apply_tick(tick1.input()).unwrap();
    assert_eq!(
        (c.rows[0].row.mfe_usd, c.rows[0].row.mae_usd),
        (dec!(0), dec!(0))
    );
    // Tick at 13:00: bars 11:00 and 12:00 are closed; the 13:00 bar is not (closes 14:00).
    // 11:00 high 104 low 97 → MFE (104 − 100) × 2 = 8, MAE (97 − 100) × 2 = −6;
    // 12:00 high 103 low 98.5 → no new extreme; 13:00 high 200 low 1 → not closed, ignored.
    let tick2 = Tick {
        at_minute: 180,
        positions: vec![position("BTC", Side::Long, dec!(2), dec!(100), dec!(101))],
        bars: BTreeMap::from([(
            "BTC".to_owned(),
            vec![
                bar(60, dec!(100), dec!(104), dec!(97), dec!(101)),
                bar(120, dec!(101), dec!(103), dec!(98.5), dec!(102)),
                bar(180, dec!(102), dec!(200), dec!(1), dec!(150)),
            ],
        )]),
        ..Tick::default()
    };
    let r = only_row(&s.apply_tick(tick2.input()).unwrap()).clone();
    assert_eq!((r.mfe_usd, r.mae_usd), (dec!(8), dec!(-6)));
    // A short sees the mirror: favourable = low, adverse = high.
    let mut s = LedgerState::new(scope());
    let tick = Tick {
        at_minute: 120,
        positions: vec![position(
            "ETH",
            Side::Short,
            dec!(1),
            dec!(3000),
            dec!(3000),
        )],
        fills: vec![fill(
            "s",
            "ETH",
            Sell,
            dec!(1),
            dec!(3000),
            dec!(0),
            0,
            None,
        )],
        bars: BTreeMap::from([(
            "ETH".to_owned(),
            vec![bar(0, dec!(3000), dec!(3030), dec!(2950), dec!(2990))],
        )]),
        ..Tick::default()
    };
    let c = s.apply_tick(tick.input()).unwrap();
    // MFE −1 × (2950 − 3000) × 1 = 50; MAE −1 × (3030 − 3000) × 1 = −30.
    assert_eq!(
        (c.rows[0].row.mfe_usd, c.rows[0].row.mae_usd),
        (dec!(50), dec!(-30))
    );
}

#[test]
fn reasons_are_bounded_at_a_char_boundary() {
    let long = "é".repeat(400);
    let props = Proposals::from([(snap(9), proposal(&long, None))]);
    let mut s = LedgerState::new(scope());
    let c = fills_only(
        &mut s,
        &[fill(
            "x",
            "BTC",
            Buy,
            dec!(1),
            dec!(1),
            dec!(0),
            0,
            Some(snap(9)),
        )],
        &props,
    );
    let reason = c.rows[0].row.entry_reason.clone().unwrap();
    assert_eq!(reason.chars().count(), REASON_MAX_CHARS);
    assert!(reason.ends_with('…'));
    assert!(reason.starts_with("éé"));
}

#[test]
fn invalid_input_is_refused_whole() {
    let mut s = LedgerState::new(scope());
    let good = fill("g", "BTC", Buy, dec!(1), dec!(100), dec!(0), 0, None);
    let zero = fill("z", "BTC", Buy, dec!(0), dec!(100), dec!(0), 1, None);
    let err = s
        .apply_fills(&[good.clone(), zero], &Proposals::new(), &BTreeMap::new())
        .unwrap_err();
    assert_eq!(
        err,
        LedgerError::NonPositiveFillQty {
            fill_id: "z".into(),
            symbol: "BTC".into(),
            qty: dec!(0)
        }
    );
    assert!(
        s.open_row("BTC").is_none(),
        "the good fill of a refused batch is not applied"
    );
    let neg = fill("n", "BTC", Buy, dec!(1), dec!(-1), dec!(0), 1, None);
    assert!(matches!(
        s.apply_fills(&[neg], &Proposals::new(), &BTreeMap::new()),
        Err(LedgerError::NonPositiveFillPrice { .. })
    ));
    let empty = fill("", "BTC", Buy, dec!(1), dec!(1), dec!(0), 1, None);
    assert!(matches!(
        s.apply_fills(&[empty], &Proposals::new(), &BTreeMap::new()),
        Err(LedgerError::EmptyFillId { index: 0, .. })
    ));
    let mut other = good.clone();
    other.price = dec!(101);
    assert!(matches!(
        s.apply_fills(&[good, other], &Proposals::new(), &BTreeMap::new()),
        Err(LedgerError::ConflictingDuplicateFill { .. })
    ));
    let twice = Tick {
        positions: vec![
            position("BTC", Side::Long, dec!(1), dec!(1), dec!(1)),
            position("BTC", Side::Long, dec!(1), dec!(1), dec!(1)),
        ],
        ..Tick::default()
    };
    assert!(matches!(
        s.apply_tick(twice.input()),
        Err(LedgerError::DuplicatePosition { .. })
    ));
    let flat = Tick {
        positions: vec![position("BTC", Side::Long, dec!(0), dec!(1), dec!(1))],
        ..Tick::default()
    };
    assert!(matches!(
        s.apply_tick(flat.input()),
        Err(LedgerError::NonPositivePositionQty { .. })
    ));

    // rebuild: rows of another deployment, closed rows, two open rows on one symbol.
    let mut s = LedgerState::new(scope());
    let c = fills_only(
        &mut s,
        &[fill("o", "BTC", Buy, dec!(1), dec!(1), dec!(0), 0, None)],
        &Proposals::new(),
    );
    let row = c.rows[0].row.clone();
    let mut foreign = row.clone();
    foreign.deployment_id = SKILL;
    assert!(matches!(
        LedgerState::rebuild(scope(), [foreign], []),
        Err(LedgerError::WrongDeployment { .. })
    ));
    let mut closed = row.clone();
    closed.status = TradeStatus::Closed;
    assert!(matches!(
        LedgerState::rebuild(scope(), [closed], []),
        Err(LedgerError::RowNotOpen { .. })
    ));
    let mut second = row.clone();
    second.id = SKILL;
    assert!(matches!(
        LedgerState::rebuild(scope(), [row, second], []),
        Err(LedgerError::DuplicateOpenRow { .. })
    ));
}

#[test]
fn holding_minutes_round_to_two_places() {
    let mut s = LedgerState::new(scope());
    let mut open = fill("h1", "BTC", Buy, dec!(1), dec!(10), dec!(0), 0, None);
    let mut close = fill("h2", "BTC", Sell, dec!(1), dec!(11), dec!(0), 0, None);
    open.time = t(0);
    close.time = t(0) + chrono::Duration::seconds(100); // 100 s = 1.666… min → 1.67
    let c = fills_only(&mut s, &[open, close], &Proposals::new());
    assert_eq!(c.rows[0].row.holding_minutes, Some(dec!(1.67)));
    assert_eq!(c.rows[0].row.realized_pnl_usd, Decimal::ONE); // (11 − 10) × 1
}

#[test]
fn stop_and_target_fills_close_as_stop_and_target() {
    // Long 0.5 BTC at 60,000 (a proposal's fill), closed by the broker's stop fill at 57,000:
    // (57,000 − 60,000) × 0.5 = −1,500. No snapshot on the closing fill: without the trigger it
    // would read as `external`.
    let mut s = LedgerState::new(scope());
    fills_only(
        &mut s,
        &[fill(
            "o",
            "BTC",
            Buy,
            dec!(0.5),
            dec!(60000),
            dec!(0),
            0,
            Some(snap(1)),
        )],
        &proposals(),
    );
    let mut stop = fill(
        "stop",
        "BTC",
        Sell,
        dec!(0.5),
        dec!(57000),
        dec!(2),
        5,
        None,
    );
    stop.trigger = Some(types::FillTrigger::Stop);
    let c = fills_only(&mut s, &[stop], &proposals());
    let r = only_row(&c);
    assert_eq!(r.close_kind, Some(CloseKind::Stop));
    assert_eq!(r.exit_price, Some(dec!(57000)));
    assert_eq!(r.realized_pnl_usd, dec!(-1500));
    assert_eq!(r.fees_usd, dec!(2));
    assert_eq!((r.exit_reason.as_deref(), r.exit_snapshot_id), (None, None));

    // Short 0.5 at 60,000 closed by its target at 54,000: −1 × (54,000 − 60,000) × 0.5 = 3,000.
    let mut s = LedgerState::new(scope());
    fills_only(
        &mut s,
        &[fill(
            "o",
            "BTC",
            Sell,
            dec!(0.5),
            dec!(60000),
            dec!(0),
            0,
            Some(snap(1)),
        )],
        &proposals(),
    );
    let mut target = fill("tp", "BTC", Buy, dec!(0.5), dec!(54000), dec!(0), 5, None);
    target.trigger = Some(types::FillTrigger::Target);
    let c = fills_only(&mut s, &[target], &proposals());
    let r = only_row(&c);
    assert_eq!(r.close_kind, Some(CloseKind::Target));
    assert_eq!(r.realized_pnl_usd, dec!(3000));
}
