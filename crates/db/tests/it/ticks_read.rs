//! Reading stored ticks back (`TickStore::ticks`): a deployment's ticks in a window of time,
//! oldest first, a page at a time, each with or without its texts — decoded from the stored
//! line blocks, byte for byte the texts recorded.

mod cases {
    use db::test_support::{Fixture, at, sample_snapshot, seed, tick_record};
    use db::{
        DbError, DecisionSnapshot, MAX_TICKS_READ, Storage, StoredTick, TickQuery, TickRecord,
        TickTexts,
    };
    use types::{RuleCode, Verdict};

    /// Tick `n` of `fx`'s deployment, at minute 60·n: texts that share most lines with the
    /// ticks around it (as real prompts do), and a verdict and proposal that vary.
    fn snapshot(fx: &Fixture, n: i64) -> DecisionSnapshot {
        let mut s = sample_snapshot(fx.deployment.id, at(60 * n));
        s.system_prompt = if n % 4 == 0 {
            "HEADER\nLEASH\n\nLESSONS: é ✓ 🙂\n\nFOOTER".into()
        } else {
            "HEADER\nLEASH\n\nFOOTER".into()
        };
        let mut context = format!("## Time\n{n:02}:00\n\n## Bars\n");
        for row in n..n + 6 {
            context.push_str(&format!("bar {row}\t1.0{row}\t\"q\"\n"));
        }
        s.context = context;
        s.steps = types::JsonText::from_text(format!(
            "[{{\"index\":0,\"text\":\"line one\\nline {n}\",\"tool_calls\":[]}}]"
        ))
        .unwrap();
        match n % 3 {
            1 => {
                s.verdict = Verdict::Rejected {
                    rule: RuleCode::PositionCap,
                    detail: format!("tick {n} over the cap"),
                };
            }
            2 => {
                s.proposal = None;
                s.verdict = Verdict::NoOp {
                    detail: "nothing proposed".into(),
                };
                s.model_error = n % 2 == 0;
                s.error = s
                    .model_error
                    .then(|| "model call failed at step 0".to_owned());
            }
            _ => {}
        }
        s
    }

    /// `s` as a tick read without its texts.
    fn bare(s: &DecisionSnapshot) -> StoredTick {
        StoredTick {
            texts: None,
            ..StoredTick::from(s.clone())
        }
    }

    /// Records ticks 0..12 of `fx` (a batch of eight, then four one by one) and returns them.
    async fn record<S: Storage>(s: &S, fx: &Fixture) -> Vec<DecisionSnapshot> {
        let all: Vec<DecisionSnapshot> = (0..12).map(|n| snapshot(fx, n)).collect();
        let batch: Vec<TickRecord> = all[..8].iter().cloned().map(tick_record).collect();
        s.record_ticks(&db::PlannedTicks::new(batch), &[])
            .await
            .unwrap();
        for x in &all[8..] {
            s.record_tick(&tick_record(x.clone())).await.unwrap();
        }
        all
    }

    pub(crate) async fn a_window_reads_oldest_first_with_the_texts_recorded<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let other = seed(s).await.unwrap();
        let written = record(s, &fx).await;
        // Another deployment's ticks at the same times are not read.
        record(s, &other).await;

        let all = s.ticks(&TickQuery::of(fx.deployment.id)).await.unwrap();
        assert_eq!(all, written.iter().map(bare).collect::<Vec<_>>());

        let with_texts = s
            .ticks(&TickQuery {
                texts: true,
                ..TickQuery::of(fx.deployment.id)
            })
            .await
            .unwrap();
        assert_eq!(with_texts.len(), written.len());
        for (got, want) in with_texts.iter().zip(&written) {
            let texts: &TickTexts = got.texts.as_ref().expect("texts asked for");
            assert_eq!(texts.system_prompt, want.system_prompt, "{}", want.tick_at);
            assert_eq!(texts.user_message, want.context, "{}", want.tick_at);
            assert_eq!(
                texts.steps.as_str(),
                want.steps.as_str(),
                "the steps' JSON byte for byte"
            );
            assert_eq!(got, &StoredTick::from(want.clone()));
            // The texts every snapshot read returns.
            assert_eq!(
                StoredTick::from(s.get_snapshot(want.id).await.unwrap()),
                *got
            );
        }

        // Both ends of the window are included.
        let window = s
            .ticks(&TickQuery {
                from: Some(at(60 * 3)),
                to: Some(at(60 * 7)),
                ..TickQuery::of(fx.deployment.id)
            })
            .await
            .unwrap();
        assert_eq!(
            window.iter().map(|t| t.tick_at).collect::<Vec<_>>(),
            (3..=7).map(|n| at(60 * n)).collect::<Vec<_>>()
        );
        let one = s
            .ticks(&TickQuery {
                from: Some(at(60 * 5)),
                to: Some(at(60 * 5)),
                ..TickQuery::of(fx.deployment.id)
            })
            .await
            .unwrap();
        assert_eq!(one, vec![bare(&written[5])]);
        // Between two ticks: none.
        let none = s
            .ticks(&TickQuery {
                from: Some(at(60 * 5 + 1)),
                to: Some(at(60 * 6 - 1)),
                ..TickQuery::of(fx.deployment.id)
            })
            .await
            .unwrap();
        assert!(none.is_empty());
    }

    pub(crate) async fn pages_continue_after_the_last_tick_read<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let written = record(s, &fx).await;
        let window = TickQuery {
            from: Some(at(60 * 2)),
            to: Some(at(60 * 10)),
            limit: 2,
            texts: true,
            ..TickQuery::of(fx.deployment.id)
        };
        let mut pages = Vec::new();
        let mut after = None;
        loop {
            let page = s.ticks(&TickQuery { after, ..window }).await.unwrap();
            assert!(page.len() <= 2);
            let Some(last) = page.last() else { break };
            after = Some(last.tick_at);
            pages.push(page);
        }
        assert_eq!(pages.len(), 5, "9 ticks, 2 a page");
        let read: Vec<StoredTick> = pages.into_iter().flatten().collect();
        let want: Vec<StoredTick> = written[2..=10]
            .iter()
            .cloned()
            .map(StoredTick::from)
            .collect();
        assert_eq!(read, want);
    }

    pub(crate) async fn bad_windows_and_limits_are_refused<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        record(s, &fx).await;
        let q = TickQuery::of(fx.deployment.id);
        for bad in [
            TickQuery { limit: 0, ..q },
            TickQuery {
                limit: MAX_TICKS_READ + 1,
                ..q
            },
            TickQuery {
                from: Some(at(60)),
                to: Some(at(59)),
                ..q
            },
        ] {
            let e = s.ticks(&bad).await.unwrap_err();
            assert!(matches!(e, DbError::Invalid { .. }), "{bad:?}: {e}");
        }
        let max = s
            .ticks(&TickQuery {
                limit: MAX_TICKS_READ,
                ..q
            })
            .await
            .unwrap();
        assert_eq!(max.len(), 12);
        let unknown = s.ticks(&TickQuery::of(uuid::Uuid::new_v4())).await.unwrap();
        assert!(unknown.is_empty(), "an unknown deployment has no ticks");
    }
}

crate::common::on_every_backend!(ticks_read;
    a_window_reads_oldest_first_with_the_texts_recorded,
    pages_continue_after_the_last_tick_read,
    bad_windows_and_limits_are_refused,
);
