//! `resolve_model`: one entry point from a model string to a model. Nothing here opens a
//! connection.

use crate::common;

use std::sync::{Arc, Mutex};

use common::env;
use model::test_support::answer;
use model::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use providers::{no_builtins, resolve_model};

/// A stand-in for the offline models that live in another crate.
struct Canned(String);

#[async_trait::async_trait]
impl LanguageModel for Canned {
    fn id(&self) -> &str {
        &self.0
    }

    async fn generate(&self, _request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        Ok(answer("canned"))
    }
}

#[test]
fn builtin_models_go_to_the_callers_resolver_with_the_full_string() {
    let seen = Mutex::new(Vec::new());
    let builtins = |model: &str| -> Result<Arc<dyn LanguageModel>, ModelError> {
        seen.lock().unwrap().push(model.to_owned());
        Ok(Arc::new(Canned(model.to_owned())))
    };

    let model = resolve_model("builtin/sma-cross:10:20", &env(&[]), &builtins).unwrap();

    assert_eq!(model.id(), "builtin/sma-cross:10:20");
    assert_eq!(*seen.lock().unwrap(), ["builtin/sma-cross:10:20"]);
}

#[test]
fn builtin_errors_pass_through() {
    let err = resolve_model("builtin/nope", &env(&[]), &no_builtins)
        .err()
        .unwrap();
    assert_eq!(err, ModelError::UnknownModel("builtin/nope".into()));
}

#[test]
fn missing_keys_name_the_exact_variable() {
    // (model string, provider, variable)
    let table = [
        ("openai/gpt-5", "openai", "OPENAI_API_KEY"),
        (
            "openrouter/openai/gpt-5-mini",
            "openrouter",
            "OPENROUTER_API_KEY",
        ),
        (
            "gateway/anthropic/claude-sonnet-4.5",
            "gateway",
            "AI_GATEWAY_API_KEY",
        ),
        (
            "anthropic/claude-sonnet-4-5",
            "anthropic",
            "ANTHROPIC_API_KEY",
        ),
        ("google/gemini-2.5-pro", "google", "GEMINI_API_KEY"),
    ];
    // Another provider's key, and a blank one, do not count.
    let lookup = env(&[
        ("OPENAI_API_KEY_TYPO", "k"),
        ("OPENROUTER_API_KEY", "   "),
        ("AI_GATEWAY_API_KEY", ""),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
    ]);
    for (model, provider, var) in table {
        let err = resolve_model(model, &lookup, &no_builtins).err().unwrap();
        assert_eq!(
            err,
            ModelError::MissingKey {
                provider: provider.into(),
                var: var.into(),
            },
            "{model}"
        );
        assert_eq!(
            err.to_string(),
            format!("{provider}: environment variable {var} is not set")
        );
    }
}

#[test]
fn each_prefix_routes_to_its_provider_and_keeps_the_full_id() {
    let lookup = env(&[
        ("OPENAI_API_KEY", "a"),
        ("OPENROUTER_API_KEY", "b"),
        ("AI_GATEWAY_API_KEY", "c"),
        ("ANTHROPIC_API_KEY", "d"),
        ("GEMINI_API_KEY", "e"),
    ]);
    for id in [
        "openai/gpt-4o-mini",
        "openrouter/anthropic/claude-haiku-4.5",
        "gateway/openai/gpt-5",
        "anthropic/claude-opus-4-1",
        "google/gemini-2.5-flash",
    ] {
        let model = resolve_model(id, &lookup, &no_builtins).unwrap();
        assert_eq!(model.id(), id);
    }
}

#[test]
fn unknown_or_incomplete_model_strings_are_rejected() {
    let lookup = env(&[("OPENAI_API_KEY", "a")]);
    for model in ["gpt-5", "openai/", "openai/  ", "", "/gpt-5"] {
        let err = resolve_model(model, &lookup, &no_builtins).err().unwrap();
        assert_eq!(err, ModelError::UnknownModel(model.into()), "{model:?}");
    }
}

#[test]
fn an_unknown_provider_is_refused_with_the_known_ones() {
    let lookup = env(&[("OPENAI_API_KEY", "a"), ("GEMINI_API_KEY", "g")]);
    let err = resolve_model("mistral/mistral-large", &lookup, &no_builtins)
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "unknown provider \"mistral\" in model \"mistral/mistral-large\" (known: anthropic, \
         openai, openrouter, gateway, google, builtin)"
    );
    assert!(
        matches!(err, ModelError::UnknownProvider { ref provider, .. } if provider == "mistral")
    );
}

#[test]
fn debug_output_never_shows_the_key() {
    let lookup = env(&[
        ("OPENAI_API_KEY", "sk-very-secret"),
        ("ANTHROPIC_API_KEY", "sk-ant-very-secret"),
    ]);
    let openai = providers::OpenAiCompatConfig::from_env(
        providers::OpenAiFlavor::OpenAi,
        "gpt-5",
        &lookup,
        providers::TransportOptions::default(),
    )
    .unwrap();
    let anthropic = providers::AnthropicConfig::from_env(
        "claude-sonnet-4-5",
        &lookup,
        providers::TransportOptions::default(),
    )
    .unwrap();
    let printed = [
        format!("{openai:?}"),
        format!(
            "{:?}",
            providers::OpenAiCompatible::new(openai.clone()).unwrap()
        ),
        format!("{anthropic:?}"),
        format!(
            "{:?}",
            providers::Anthropic::new(anthropic.clone()).unwrap()
        ),
    ];
    for text in printed {
        assert!(!text.contains("very-secret"), "{text}");
        assert!(
            text.contains("gpt-5") || text.contains("claude-sonnet-4-5"),
            "{text}"
        );
    }
}
