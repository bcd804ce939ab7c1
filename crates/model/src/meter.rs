//! What a run actually spends at the provider: [`Metered`], a [`LanguageModel`] decorator that
//! adds up the usage and the dollar cost ([`estimate_cost`]) of every call that passes through
//! it, into a [`Spend`] shared with whoever watches the budget.
//!
//! Put it right above the provider, under any cache or recording (a replayed response never
//! reaches it, so it costs nothing), and share one [`Spend`] between the models of a run (the
//! trading model and a reflection model) to get the run's bill.
//!
//! ```
//! use std::sync::Arc;
//! use model::{Metered, Spend};
//! # use model::{LanguageModel, ModelRequest, ModelResponse, ModelError, FinishReason, Usage};
//! # struct Fixed;
//! # #[async_trait::async_trait]
//! # impl LanguageModel for Fixed {
//! #     fn id(&self) -> &str { "openai/gpt-4o-mini" }
//! #     async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ModelError> {
//! #         Ok(ModelResponse { text: None, tool_calls: vec![], finish: FinishReason::Stop,
//! #             usage: Usage { input: 1_000_000, output: 0, cache_read: 0, cache_write: 0 } })
//! #     }
//! # }
//! # tokio_test_block_on(async {
//! let spend = Spend::default();
//! let model = Metered::new(Arc::new(Fixed), spend.clone());
//! # let request = ModelRequest { model: "gpt-4o-mini".into(), system: String::new(),
//! #     messages: vec![], tools: vec![], max_output_tokens: 16, deadline: None };
//! model.generate(&request).await.unwrap();
//! // One million input tokens of gpt-4o-mini: $0.15.
//! assert_eq!(spend.totals().usd.to_string(), "0.15");
//! assert_eq!(spend.totals().calls, 1);
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     let waker = std::task::Waker::noop();
//! #     let mut cx = std::task::Context::from_waker(&waker);
//! #     let mut f = std::pin::pin!(f);
//! #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
//! # }
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use rust_decimal::Decimal;
use types::Usage;

use crate::cost::estimate_cost;
use crate::model::{LanguageModel, ModelError, ModelRequest, ModelResponse};

/// What went through the meters sharing one [`Spend`] so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendTotals {
    /// Calls that returned a response (failed calls are not billed and not counted).
    pub calls: u64,
    /// Their tokens, as the provider reported them.
    pub usage: Usage,
    /// Their cost in USD at the rate table's prices (0 for a model the table does not price),
    /// normalised.
    pub usd: Decimal,
    /// Calls to a model the rate table does not price (their cost is unknown, not 0).
    pub unpriced_calls: u64,
}

/// A shared running total (cheap to clone: clones share it).
#[derive(Debug, Clone, Default)]
pub struct Spend(Arc<Mutex<SpendTotals>>);

impl Spend {
    /// The totals so far.
    #[must_use]
    pub fn totals(&self) -> SpendTotals {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, model_id: &str, usage: &Usage) {
        let cost = estimate_cost(model_id, usage);
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        t.calls += 1;
        t.usage += *usage;
        t.usd = t.usd.saturating_add(cost.usd).normalize();
        if !cost.known {
            t.unpriced_calls += 1;
        }
    }
}

/// A model whose successful calls are added to a [`Spend`]; otherwise exactly the inner model
/// (same id, same requests, same answers).
pub struct Metered {
    inner: Arc<dyn LanguageModel>,
    spend: Spend,
}

impl Metered {
    /// Meters `inner` into `spend`.
    #[must_use]
    pub fn new(inner: Arc<dyn LanguageModel>, spend: Spend) -> Self {
        Self { inner, spend }
    }
}

#[async_trait::async_trait]
impl LanguageModel for Metered {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let response = self.inner.generate(request).await?;
        self.spend.add(self.inner.id(), &response.usage);
        Ok(response)
    }
}
