//! What a run needs to execute its cells: the suite read from the baseline version's bundle, the
//! versions compiled, one endpoint per model the cells call (with the tenant's credentials), and
//! the runner prepared once per run and instance.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use promptstack::eval::HttpEndpoint;
use promptstack_eval::endpoint::Endpoint;
use promptstack_eval::run::{Files, RunOptions, Runner, VersionAgent};
use promptstack_eval::suite::{Assertion, FenceStyle, Model, Suite, Version};
use promptstack_store::{
    AgentName, CredentialName, ErrorKind, PageRequest, RunId, RunInfo, Tenant, VersionId,
};

use crate::bundle::{Bundle, SPEC_NAME};
use crate::problem::{Problem, printable};
use crate::state::AppState;

/// A suite read from a version's bundle.
pub(crate) struct Source {
    pub(crate) bundle: Bundle,
    pub(crate) suite: Suite,
}

/// The suite `path` of `version`'s bundle. 422 `unknown-suite` naming the bundle's suites when
/// it has no such suite.
pub(crate) async fn load_suite(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    version: &VersionId,
    path: &str,
) -> Result<Source, Problem> {
    let stored = state
        .inner
        .store
        .version(tenant, agent, version)
        .await
        .map_err(|e| crate::engine::store_problem(state, e))?;
    let path = path.to_owned();
    // Suites compile their patterns: engine work, within the tenant's share like a spec.
    crate::engine::blocking(state, move || {
        let bundle = Bundle::from_stored(&stored.bundle)?;
        let Some((_, text)) = bundle.suites().find(|(p, _)| *p == path) else {
            let known: Vec<&str> = bundle.suites().map(|(p, _)| p).collect();
            return Err(Problem::unprocessable(
                "unknown-suite",
                format!(
                    "the version's bundle has no suite `{}` (it has: {})",
                    printable(&path),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let suite = Suite::parse(text.as_bytes(), &path).map_err(|e| {
            Problem::unprocessable("invalid-suite", format!("`{path}` does not read: {e}"))
        })?;
        Ok(Source { bundle, suite })
    })
    .await?
}

/// The gate suite of a bundle: its path and the suite, when one declares `[gate]`.
pub(crate) fn gate_suite(bundle: &Bundle) -> Option<(String, Suite)> {
    bundle.suites().find_map(|(path, text)| {
        let suite = Suite::parse(text.as_bytes(), path).ok()?;
        suite.gate.is_some().then(|| (path.to_owned(), suite))
    })
}

/// Every model a run's cells call, by name: the run's models and the judges of its scenarios'
/// rubrics.
pub(crate) fn called_models<'a>(
    suite: &'a Suite,
    models: &'a [String],
    scenarios: &[String],
) -> BTreeMap<&'a str, &'a Model> {
    let mut names: BTreeSet<&str> = models.iter().map(String::as_str).collect();
    for scenario in suite
        .scenarios
        .iter()
        .filter(|s| scenarios.contains(&s.name))
    {
        for assertion in &scenario.assertions {
            if let Assertion::Rubric { judge, .. } = assertion {
                names.insert(judge.as_str());
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| suite.models.get(name).map(|model| (name, model)))
        .collect()
}

/// A bundle's files as the runner reads them: a file of the bundle, or an example send as
/// `sends/<name>.json`.
struct BundleFiles<'a>(&'a Bundle);

impl Files for BundleFiles<'_> {
    fn read(&self, path: &str) -> Result<Arc<[u8]>, String> {
        if let Some(text) = self.0.files.get(path) {
            return Ok(Arc::from(text.as_bytes()));
        }
        path.strip_prefix("sends/")
            .and_then(|name| name.strip_suffix(".json"))
            .and_then(|name| self.0.sends.get(name))
            .and_then(|value| serde_json::to_vec(value).ok())
            .map(Arc::from)
            .ok_or_else(|| format!("{path}: not in the bundle"))
    }
}

/// The send context a scenario of `source` names, as JSON, and nothing when it cannot be read.
pub(crate) fn scenario_send(source: &Source, scenario: &str) -> Option<serde_json::Value> {
    let scenario = source.suite.scenarios.iter().find(|s| s.name == scenario)?;
    match (&scenario.send, &scenario.context) {
        (Some(path), _) => {
            let bytes = BundleFiles(&source.bundle).read(path).ok()?;
            serde_json::from_slice(&bytes).ok()
        }
        (None, Some(context)) => serde_json::to_value(context).ok(),
        (None, None) => None,
    }
}

/// Why a run could not be prepared.
pub(crate) enum Unprepared {
    /// The run can never execute here as it is (a suite that does not read, a model that may
    /// not be called, a missing credential): it fails, with this message.
    Fails(String),
    /// The store could not be read: try again later.
    Later(String),
}

impl Unprepared {
    pub(crate) fn of(problem: &Problem) -> Unprepared {
        if problem.status == 503 {
            Unprepared::Later(problem.detail.clone())
        } else {
            Unprepared::Fails(problem.detail.clone())
        }
    }
}

/// Prepares a run: its suite from the baseline's bundle, its versions compiled, its endpoints
/// with the tenant's credentials, the runner.
pub(crate) async fn prepare(
    state: &AppState,
    tenant: &Tenant,
    run: &RunId,
) -> Result<Arc<Runner>, Unprepared> {
    let run = &state
        .inner
        .store
        .run(tenant, run)
        .await
        .map_err(|e| Unprepared::Later(format!("the run could not be read: {e}")))?;
    let Some(first) = run.refs.first() else {
        return Err(Unprepared::Fails("the run names no version".into()));
    };
    let source = load_suite(state, tenant, &run.agent, &first.version, &run.suite)
        .await
        .map_err(|p| Unprepared::of(&p))?;
    let mut versions = Vec::new();
    let mut seen = BTreeSet::new();
    for r in &run.refs {
        if !seen.insert(r.version.clone()) {
            continue;
        }
        let compiled = crate::engine::compiled(state, tenant, &run.agent, &r.version)
            .await
            .map_err(|p| Unprepared::of(&p))?;
        versions.push(VersionAgent {
            name: r.version.to_string(),
            agent: (*compiled.agent).clone(),
        });
    }
    let config = &state.inner.config.eval;
    let mut endpoints: BTreeMap<String, Arc<dyn Endpoint>> = BTreeMap::new();
    for (name, model) in called_models(&source.suite, &run.models, &run.scenarios) {
        let model = config.model(name, model).map_err(Unprepared::Fails)?;
        let key = match &model.credential {
            None => None,
            Some(credential) => Some(credential_value(state, tenant, run, credential).await?),
        };
        let endpoint = HttpEndpoint::with_key(&model, key)
            .map_err(|e| Unprepared::Fails(format!("model `{name}`: {e}")))?;
        endpoints.insert(name.to_owned(), Arc::new(endpoint));
    }
    let mut suite = source.suite.clone();
    suite.matrix.versions = versions
        .iter()
        .map(|v| Version {
            name: v.name.clone(),
            spec: Some(SPEC_NAME.to_owned()),
            reference: None,
            fence: FenceStyle::Markers,
        })
        .collect();
    suite.matrix.models.clone_from(&run.models);
    let options = RunOptions {
        scenarios: run.scenarios.clone(),
        models: run.models.clone(),
        repeats: Some(run.repeats),
        ..RunOptions::default()
    };
    let name = run.suite.clone();
    // On the engine's pool like every render: a run's preparation takes a turn there, so the
    // workers' engine work cannot crowd out requests.
    let runner = crate::engine::blocking(state, move || {
        Runner::with_files(
            &suite,
            &name,
            &BundleFiles(&source.bundle),
            versions,
            endpoints,
            options,
        )
    })
    .await
    .map_err(|p| Unprepared::Later(p.detail))?
    .map_err(|e| Unprepared::Fails(e.to_string()))?;
    Ok(Arc::new(runner))
}

/// The value of a tenant's credential for a run, with where it came from as messages name it.
async fn credential_value(
    state: &AppState,
    tenant: &Tenant,
    run: &RunInfo,
    credential: &str,
) -> Result<(String, String), Unprepared> {
    let Some(key) = state.inner.config.credentials_key.as_ref() else {
        return Err(Unprepared::Fails(format!(
            "the suite names credential `{credential}`, and this server stores no credentials \
             (start it with {})",
            promptstack_store::CREDENTIALS_KEY_ENV
        )));
    };
    let name = CredentialName::parse(credential)
        .map_err(|e| Unprepared::Fails(format!("credential `{credential}`: {e}")))?;
    match state
        .inner
        .store
        .use_credential(tenant, &run.id, &name, key)
        .await
    {
        Ok(secret) => Ok((format!("credential `{name}`"), secret.expose().to_owned())),
        Err(e) if e.kind() == ErrorKind::Unavailable => Err(Unprepared::Later(e.to_string())),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(Unprepared::Fails(format!(
            "the tenant has no credential `{name}`"
        ))),
        Err(e) => Err(Unprepared::Fails(format!("credential `{name}`: {e}"))),
    }
}

/// Whether the tenant has credential `name` (looked up through the listing).
pub(crate) async fn has_credential(
    state: &AppState,
    tenant: &Tenant,
    name: &str,
) -> Result<bool, Problem> {
    let mut page = PageRequest::first().limit(u32::MAX);
    loop {
        let found = state
            .inner
            .store
            .credentials(tenant, &page)
            .await
            .map_err(|e| crate::engine::store_problem(state, e))?;
        if found.items.iter().any(|c| c.name.as_str() == name) {
            return Ok(true);
        }
        match found.next {
            Some(next) => page = PageRequest::first().limit(u32::MAX).after(next),
            None => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EvalConfig;

    fn model(base_url: &str) -> Model {
        let suite = format!(
            "suite_version = 1\n[models.m]\nformat = \"openai-chat\"\nbase_url = \"{base_url}\"\n\
             model = \"x\"\n[matrix]\nversions = [{{ name = \"v\", spec = \"agent.toml\" }}]\n\
             models = [\"m\"]\n[[scenarios]]\nname = \"s\"\nsend = \"sends/a.json\"\n\
             [[scenarios.assert]]\ntype = \"contains\"\nvalue = \"x\"\n"
        );
        let suite = Suite::parse(suite.as_bytes(), "evals/s.toml").unwrap();
        suite.models["m"].clone()
    }

    #[test]
    fn only_the_providers_and_the_allowed_prefixes_are_called() {
        let config = EvalConfig {
            endpoints: vec!["http://127.0.0.1:8080/v1".into()],
            ..EvalConfig::default()
        };
        for allowed in [
            "https://api.openai.com/v1",
            "https://api.anthropic.com",
            "https://generativelanguage.googleapis.com/v1beta",
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8080/v1/",
            "http://127.0.0.1:8080/v1/deeper",
        ] {
            assert!(config.allows(allowed), "{allowed}");
        }
        for refused in [
            "https://api.openai.com.example.net/v1",
            "http://api.openai.com/v1",
            "https://api.openai.com:8443/v1",
            "https://evil.example/api.openai.com",
            "http://127.0.0.1:8080/v10",
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8081/v1",
            "http://localhost:8080/v1",
            "not a url",
        ] {
            assert!(!config.allows(refused), "{refused}");
        }
    }

    #[test]
    fn the_operator_s_url_replaces_the_suite_s_and_env_keys_are_refused() {
        let mut config = EvalConfig::default();
        let inside = model("http://10.0.0.5:9000/v1");
        assert!(
            config
                .model("m", &inside)
                .unwrap_err()
                .contains("does not allow")
        );
        config
            .model_urls
            .insert("m".into(), "http://127.0.0.1:7000/v1".into());
        assert_eq!(
            config.model("m", &inside).unwrap().base_url,
            "http://127.0.0.1:7000/v1"
        );
        let mut keyed = model("https://api.openai.com/v1");
        keyed.api_key_env = Some("OPENAI_API_KEY".into());
        assert!(
            config
                .model("other", &keyed)
                .unwrap_err()
                .contains("credential")
        );
        keyed.credential = Some("openai".into());
        assert!(config.model("other", &keyed).is_ok());
    }
}
