//! Three nats-servers (routes, JetStream, `sync_interval: always`, `max_payload: 8MB`) and
//! botlist nodes as real processes on loopback.
//!
//! The nats-server comes from `BOTLIST_NATS_SERVER` or `PATH` and must be 2.10.23 or later;
//! without one each test says it was skipped and why, unless `BOTLIST_CLUSTER_TESTS=require`,
//! which turns the skip into a failure (`.ci/run` sets it after installing the pinned server
//! with scripts/nats-server.sh).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

pub const ADMIN: &str = "cluster-admin-token";
pub const TOKEN: &str = "cluster-secret";

/// The nats-server to run, or why there is none.
pub fn nats_server() -> Result<PathBuf, String> {
    let path = match std::env::var_os("BOTLIST_NATS_SERVER") {
        Some(path) => PathBuf::from(path),
        None => std::env::var_os("PATH")
            .and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("nats-server"))
                    .find(|candidate| candidate.is_file())
            })
            .ok_or("no nats-server on PATH and BOTLIST_NATS_SERVER is not set (scripts/nats-server.sh installs one)")?,
    };
    let output = Command::new(&path)
        .arg("--version")
        .output()
        .map_err(|e| format!("{} does not run: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let version = text
        .split_whitespace()
        .find_map(|word| word.strip_prefix('v'))
        .unwrap_or("");
    let parts: Vec<u64> = version
        .split(['.', '-'])
        .take(3)
        .filter_map(|p| p.parse().ok())
        .collect();
    if parts.len() < 3 || (parts[0], parts[1], parts[2]) < (2, 10, 23) {
        return Err(format!(
            "{} is {text:?}; the cluster needs nats-server 2.10.23 or later",
            path.display()
        ));
    }
    Ok(path)
}

/// The nats-server, or `None` after saying why the test is skipped (a failure under
/// `BOTLIST_CLUSTER_TESTS=require`).
pub fn nats_or_skip(test: &str) -> Option<PathBuf> {
    match nats_server() {
        Ok(path) => Some(path),
        Err(why) => {
            if std::env::var("BOTLIST_CLUSTER_TESTS").as_deref() == Ok("require") {
                panic!("{test}: BOTLIST_CLUSTER_TESTS=require, but {why}");
            }
            // Straight to the process's standard error: the test harness captures `eprintln!`
            // of a passing test, and a skip must be seen in a plain `cargo test`.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "cluster test {test}: skipped: {why}");
            None
        }
    }
}

pub struct NatsServer {
    child: Option<Child>,
    pub port: u16,
    /// The monitoring port (`/jsz`: who leads what).
    pub monitor: u16,
    binary: PathBuf,
    config: PathBuf,
}

impl NatsServer {
    /// The server's log goes beside its configuration (`n0.log`, appended across restarts),
    /// for a test that fails to say why a server did not come up.
    fn spawn(binary: &Path, config: &Path) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(config.with_extension("log"))
            .expect("the server's log");
        Command::new(binary)
            .arg("-c")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server starts")
    }

    /// The last lines the server logged.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.config.with_extension("log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// The server's whole log, across its restarts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.config.with_extension("log")).unwrap_or_default()
    }

    /// Sends `signal` (`STOP`, `CONT`) to the running server: a server that hangs, where
    /// `kill9` is one that died.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("the server runs").id();
        let status = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on its store and ports (after `kill9`) and waits until its
    /// JetStream has caught up with its peers: until then it is not a voter the cluster can
    /// lean on, and killing another server would be a second fault, not the one a test names.
    pub fn restart(&mut self) {
        self.kill9();
        self.child = Some(Self::spawn(&self.binary, &self.config));
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not listen:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.wait_current(Duration::from_secs(60));
    }

    /// Polls `/healthz`, which answers 200 only once the server's meta layer, streams and
    /// consumers are current.
    pub fn wait_current(&self, within: Duration) {
        let started = Instant::now();
        let client = Client::new();
        loop {
            let healthy = client
                .get(format!("http://127.0.0.1:{}/healthz", self.monitor))
                .timeout(Duration::from_secs(2))
                .send()
                .is_ok_and(|r| r.status().is_success());
            if healthy {
                eprintln!(
                    "nats-server :{} is current after {:?}",
                    self.port,
                    started.elapsed()
                );
                return;
            }
            assert!(
                started.elapsed() < within,
                "nats-server :{} not current within {within:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// `GET /jsz?...` on this server's monitoring port.
    pub fn jsz(&self, query: &str) -> Option<Value> {
        Client::new()
            .get(format!("http://127.0.0.1:{}/jsz?{query}", self.monitor))
            .timeout(Duration::from_secs(2))
            .send()
            .ok()?
            .json()
            .ok()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Three routed nats-servers with JetStream, each storing in its own temporary directory.
pub struct NatsCluster {
    pub servers: Vec<NatsServer>,
    _dir: TempDir,
}

impl NatsCluster {
    /// Three servers listening, on ports drawn afresh when one of them does not come up: a
    /// port found free can be taken before the server binds it (a client's outgoing
    /// connection draws from the same range), as one CI run saw ("nats-server did not listen").
    pub fn start(binary: &Path) -> Self {
        for attempt in 1..=3 {
            match Self::try_start(binary) {
                Ok(cluster) => return cluster,
                Err(why) => eprintln!("nats-server cluster, attempt {attempt}: {why}; new ports"),
            }
        }
        panic!("nats-server did not listen in three attempts");
    }

    /// Nine distinct ports: each listener is held until all are drawn.
    fn distinct_ports() -> Vec<u16> {
        let held: Vec<TcpListener> = (0..9)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
            .collect();
        held.iter()
            .map(|l| l.local_addr().expect("bound").port())
            .collect()
    }

    fn try_start(binary: &Path) -> Result<Self, String> {
        let dir = tempfile::tempdir().expect("temp dir");
        let ports = Self::distinct_ports();
        let (client_ports, rest) = ports.split_at(3);
        let (monitor_ports, route_ports) = rest.split_at(3);
        let routes: Vec<String> = route_ports
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect();
        let mut servers = Vec::new();
        for i in 0..3 {
            let store = dir.path().join(format!("n{i}"));
            std::fs::create_dir_all(&store).expect("store dir");
            let config = dir.path().join(format!("n{i}.conf"));
            std::fs::write(
                &config,
                format!(
                    "server_name: n{i}\nlisten: 127.0.0.1:{}\nhttp: 127.0.0.1:{}\nmax_payload: 8MB\n\
                     jetstream {{ store_dir: {:?}, sync_interval: always }}\n\
                     cluster {{ name: botlist, listen: 127.0.0.1:{}, routes: [{}], no_advertise: true }}\n",
                    client_ports[i],
                    monitor_ports[i],
                    store.display().to_string(),
                    route_ports[i],
                    routes.join(", ")
                ),
            )
            .expect("config written");
            servers.push(NatsServer {
                child: Some(NatsServer::spawn(binary, &config)),
                port: client_ports[i],
                monitor: monitor_ports[i],
                binary: binary.to_owned(),
                config,
            });
        }
        let cluster = Self { servers, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        for server in &cluster.servers {
            while std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err() {
                if Instant::now() >= deadline {
                    // Dropping the cluster kills the servers that did start.
                    return Err(format!(
                        "port {} did not listen within 10 s; its log ends:\n{}",
                        server.port,
                        server.log_tail()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(cluster)
    }

    /// The index of the server that leads `what`: `"meta"` (the JetStream meta group) or a
    /// stream's name (`botlist_journal`, `KV_botlist_lease`), as the running servers say,
    /// waiting up to 20 s for one to say.
    pub fn leader_of(&self, what: &str) -> Option<usize> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(leader) = self.leader_now(what) {
                return Some(leader);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The leader of `what` the first running server names, at once; `None` while none names
    /// one (during an election).
    pub fn leader_now(&self, what: &str) -> Option<usize> {
        self.servers
            .iter()
            .filter(|s| s.running())
            .find_map(|server| {
                let name = if what == "meta" {
                    server
                        .jsz("")
                        .and_then(|j| j["meta_cluster"]["leader"].as_str().map(str::to_owned))
                } else {
                    server
                        .jsz("accounts=true&streams=true")
                        .and_then(|j| stream_leader(&j, what))
                };
                name.filter(|n| !n.is_empty())?
                    .strip_prefix('n')?
                    .parse()
                    .ok()
            })
    }

    /// `nats://127.0.0.1:a,nats://127.0.0.1:b,...`
    pub fn urls(&self) -> String {
        self.servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.port))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A botlist node: the real binary in cluster mode.
pub struct Node {
    child: Child,
    pub name: String,
    pub base: String,
    pub root: String,
    pub client: Client,
    pub log: Arc<Mutex<String>>,
    pub args: Vec<String>,
    /// Variables set for the process beside those it inherits (kept for a restart).
    pub env: Vec<(String, String)>,
    _dir: TempDir,
}

impl Node {
    pub fn start(name: &str, nats: &str, extra: &[&str]) -> Node {
        Self::start_with(name, Self::args(name, nats, extra))
    }

    /// The harness's arguments for a node (`--lease-ttl 3` among them) and `extra`.
    pub fn args(name: &str, nats: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--admin-token",
            ADMIN,
            "--workers",
            "2",
            "--rate-limit",
            "0",
            "--replicate",
            nats,
            "--cluster-token",
            TOKEN,
            "--node-id",
            name,
            "--lease-ttl",
            "3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    pub fn start_with(name: &str, args: Vec<String>) -> Node {
        Self::start_in(name, args, tempfile::tempdir().expect("temp dir"))
    }

    /// A node with the harness's arguments and `extra`, and the variables `env` (the clock's
    /// offset file, say: src/startup/clock.rs).
    pub fn start_env(name: &str, nats: &str, extra: &[&str], env: &[(&str, &str)]) -> Node {
        let env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self::try_start_env(
            name,
            Self::args(name, nats, extra),
            tempfile::tempdir().expect("temp dir"),
            env,
        )
        .unwrap_or_else(|(status, log)| panic!("node {name} did not start ({status}): {log}"))
    }

    /// Starts a node stopped before again, on its data directory and with its arguments and
    /// variables.
    pub fn start_in_dir_of(mut stopped: Node) -> Node {
        let dir = std::mem::replace(&mut stopped._dir, tempfile::tempdir().expect("temp dir"));
        let name = stopped.name.clone();
        Self::try_start_env(&name, stopped.args.clone(), dir, stopped.env.clone())
            .unwrap_or_else(|(status, log)| panic!("node {name} did not start ({status}): {log}"))
    }

    /// A node with the default lease TTL (7 s).
    pub fn start_default_lease(name: &str, nats: &str) -> Node {
        let mut args = Self::args(name, nats, &[]);
        let ttl = args
            .iter()
            .position(|a| a == "--lease-ttl")
            .expect("the harness sets a TTL");
        args.drain(ttl..ttl + 2);
        Self::start_with(name, args)
    }

    fn start_in(name: &str, args: Vec<String>, dir: TempDir) -> Node {
        Self::try_start_in(name, args, dir)
            .unwrap_or_else(|(status, log)| panic!("node {name} did not start ({status}): {log}"))
    }

    /// Starts a node with the harness's arguments on `dir` (a damaged copy of another node's
    /// data directory, say), or gives how it exited and what it logged.
    pub fn try_start_on(
        name: &str,
        nats: &str,
        dir: TempDir,
    ) -> Result<Node, (ExitStatus, String)> {
        Self::try_start_in(name, Self::args(name, nats, &[]), dir)
    }

    fn try_start_in(
        name: &str,
        args: Vec<String>,
        dir: TempDir,
    ) -> Result<Node, (ExitStatus, String)> {
        Self::try_start_env(name, args, dir, Vec::new())
    }

    fn try_start_env(
        name: &str,
        args: Vec<String>,
        dir: TempDir,
        env: Vec<(String, String)>,
    ) -> Result<Node, (ExitStatus, String)> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_botlist"))
            .args(&args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .arg("--data-dir")
            .arg(dir.path())
            // Why a follower stops following, should it, is what a failed run needs most.
            .env(
                "RUST_LOG",
                "warn,botlist::startup::node=debug,botlist::cluster::view=info",
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("botlist starts");
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let base = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(base) = line.strip_prefix("listening on ") {
                        break base.to_owned();
                    }
                }
                _ => {
                    let status = child.wait().expect("waited");
                    std::thread::sleep(Duration::from_millis(100));
                    let said = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    return Err((status, said));
                }
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let root = base
            .strip_suffix("/api/v1")
            .expect("the default base path")
            .to_owned();
        Ok(Node {
            child,
            name: name.to_owned(),
            base,
            root,
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("client"),
            log,
            args,
            env,
            _dir: dir,
        })
    }

    /// The node's data directory.
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// How the process ended, if it has.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Waits up to `within` for the process to exit.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `GET /readyz`: its status and error code (empty when ready).
    pub fn readiness(&self) -> Option<(reqwest::StatusCode, String)> {
        let response = self
            .client
            .get(format!("{}/readyz", self.root))
            .send()
            .ok()?;
        let status = response.status();
        let body: Value = response.json().ok()?;
        Some((
            status,
            body["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ))
    }

    pub fn status(&self) -> Option<Value> {
        let response = self
            .client
            .get(format!("{}/cluster", self.root))
            .send()
            .ok()?;
        response.json().ok()
    }

    /// `GET {base}/admin/cluster/digest`: (applied_seq, digest); (0, "") when it fails.
    pub fn digest(&self) -> (u64, String) {
        let answer = self
            .client
            .get(format!("{}/admin/cluster/digest", self.base))
            .header("Authorization", ADMIN)
            .timeout(Duration::from_millis(1500))
            .send();
        let body = match answer {
            Ok(r) if r.status() == StatusCode::OK => r.json::<Value>().ok(),
            Ok(r) => {
                eprintln!(
                    "node {}: digest answered {}: {}",
                    self.name,
                    r.status(),
                    r.text().unwrap_or_default()
                );
                None
            }
            Err(error) => {
                eprintln!("node {}: digest failed: {error}", self.name);
                None
            }
        };
        match body {
            Some(body) => (
                body["applied_seq"].as_u64().unwrap_or(0),
                body["digest"].as_str().unwrap_or("").to_owned(),
            ),
            None => (0, String::new()),
        }
    }

    pub fn role(&self) -> String {
        self.status()
            .and_then(|s| s["role"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    pub fn get(&self, path: &str) -> reqwest::Result<reqwest::blocking::Response> {
        self.client.get(format!("{}{path}", self.base)).send()
    }

    pub fn post(
        &self,
        path: &str,
        token: &str,
        body: &Value,
    ) -> reqwest::Result<reqwest::blocking::Response> {
        self.client
            .post(format!("{}{path}", self.base))
            .header("Authorization", token)
            .json(body)
            .send()
    }

    /// Lists a bot through this node (forwarded if it does not write), retrying while there
    /// is no writer yet.
    pub fn create_bot(&self, platform_id: u64) -> (String, String) {
        let body = json!({
            "platform_id": platform_id.to_string(),
            "name": format!("Bot {platform_id}"),
            "username": format!("bot{platform_id}"),
            "short_description": "replicated",
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = self.post("/admin/bots", ADMIN, &body) {
                let status = response.status();
                let created: Value = response.json().unwrap_or(Value::Null);
                if status == StatusCode::CREATED {
                    return (
                        created["bot"]["id"].as_str().expect("id").to_owned(),
                        created["token"].as_str().expect("token").to_owned(),
                    );
                }
                assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{created}");
            }
            assert!(Instant::now() < deadline, "no writer took the bot");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The bot's vote count and its distinct voters, as this node answers (retried for a few
    /// seconds while the node answers 503, as while a new writer takes over).
    pub fn votes(&self, bot: &str, token: &str) -> (u64, Vec<u64>) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(answer) = self.try_votes(bot, token) {
                return answer;
            }
            assert!(
                Instant::now() < deadline,
                "node {} does not answer reads",
                self.name
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn try_votes(&self, bot: &str, token: &str) -> Option<(u64, Vec<u64>)> {
        let info = self.get(&format!("/bots/{bot}")).ok()?;
        if info.status() != StatusCode::OK {
            return None;
        }
        let info: Value = info.json().ok()?;
        let voters = self
            .client
            .get(format!("{}/bots/{bot}/votes", self.base))
            .header("Authorization", token)
            .send()
            .ok()?;
        if voters.status() != StatusCode::OK {
            return None;
        }
        let voters: Value = voters.json().ok()?;
        let ids = voters
            .as_array()?
            .iter()
            .map(|v| v["id"].as_str().expect("id").parse().expect("snowflake"))
            .collect();
        Some((info["vote_count"].as_u64()?, ids))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until exactly one node says it writes; returns its index.
pub fn writer_of(nodes: &[Node], within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let writers: Vec<usize> = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.role() == "writer")
            .map(|(i, _)| i)
            .collect();
        if writers.len() == 1 {
            return writers[0];
        }
        assert!(
            Instant::now() < deadline,
            "no single writer: {:?}",
            nodes.iter().map(Node::role).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stream `what`'s `cluster` object (its leader, and its replicas as that server sees them) in
/// a `/jsz?accounts=true&streams=true` answer.
pub fn stream_cluster<'a>(jsz: &'a Value, what: &str) -> Option<&'a Value> {
    jsz["account_details"]
        .as_array()?
        .iter()
        .flat_map(|account| account["stream_detail"].as_array().into_iter().flatten())
        .find(|stream| stream["name"] == what)
        .map(|stream| &stream["cluster"])
}

/// The leader a `/jsz?accounts=true&streams=true` answer names for stream `what`.
pub fn stream_leader(jsz: &Value, what: &str) -> Option<String> {
    stream_cluster(jsz, what)?["leader"]
        .as_str()
        .map(str::to_owned)
}
