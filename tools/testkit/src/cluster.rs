//! A real Redis Cluster for tests: three primaries and three replicas, each a `redis-server`
//! process of this machine (Debian's `redis-server` package; `.ci/run` installs it where
//! missing) on a free loopback port, joined by `redis-cli --cluster create`. It lives in a
//! temporary directory and dies with the [`RedisCluster`] value.
//!
//! Every node loads the services' ACL users (`deploy/redis/acl.conf`), so that a store's tests
//! can run as its service's user ([`RedisCluster::url_as`]). Besides the cluster's URL
//! ([`RedisCluster::url`], the `redis+cluster://` form the services take), it can do to the cluster what an operator or a fault does: move a slot to another
//! primary while clients use it ([`RedisCluster::migrate_slot`], with `MOVED` and `ASK` on the
//! way), hand a primary's slots to its replica ([`RedisCluster::failover`], Redis's manual
//! failover, which loses nothing), kill a primary outright and wait for its replica to be
//! elected ([`RedisCluster::kill_primary`]), or stop one so that it goes silent, as a lost host
//! does ([`RedisCluster::freeze_primary`]).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a node may be silent before the others count it as failed (ms): short, so that a
/// test's failover takes seconds.
pub const NODE_TIMEOUT_MS: u64 = 1_000;

/// A running cluster (see the module documentation). Dropping it kills every node.
pub struct RedisCluster {
    dir: PathBuf,
    nodes: Vec<Node>,
}

struct Node {
    port: u16,
    child: Option<Child>,
    /// A node stopped with SIGSTOP ([`RedisCluster::freeze_primary`]): killed at the end.
    frozen: Option<Child>,
}

impl std::fmt::Debug for RedisCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCluster")
            .field("ports", &self.ports())
            .finish()
    }
}

/// The `redis-server` and `redis-cli` of this machine, or a panic saying how to get them.
fn binaries() -> (PathBuf, PathBuf) {
    let find = |name: &str| {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "the Redis Cluster tests need {name} (Debian: apt-get install redis-server; \
                     .ci/run installs it where missing)"
                )
            })
    };
    (find("redis-server"), find("redis-cli"))
}

impl RedisCluster {
    /// Starts six nodes and joins them as three primaries (each an equal range of slots) with
    /// a replica each; returns once every node reports the cluster `ok` and every replica has
    /// synchronised.
    ///
    /// # Panics
    /// When `redis-server` is missing or the cluster does not form within a minute.
    pub fn start() -> RedisCluster {
        let (server, cli) = binaries();
        let dir = std::env::temp_dir().join(format!(
            "arbiter-cluster-{}-{}",
            std::process::id(),
            crate::free_port()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        std::fs::write(dir.join("users.acl"), crate::render_acl()).expect("the ACL file");
        let mut cluster = RedisCluster {
            dir,
            nodes: Vec::new(),
        };
        for _ in 0..6 {
            let node = cluster.start_node(&server, crate::free_port());
            cluster.nodes.push(node);
        }
        let mut create = Command::new(cli);
        create.args(["--cluster", "create"]);
        for n in &cluster.nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_healthy();
        cluster
    }

    /// Starts one node and waits until it answers as itself (its process id). A free port is only free when it is drawn:
    /// another test's server (or a container's published port) may take it, or the node's bus
    /// port, before this node binds it, and then the node exits at once. So a node that exits
    /// or stays silent for 10 s is started again on fresh ports, up to five times.
    fn start_node(&self, server: &std::path::Path, first_port: u16) -> Node {
        let mut last_log = String::new();
        for attempt in 0..5 {
            let port = if attempt == 0 {
                first_port
            } else {
                crate::free_port()
            };
            let mut child = self.spawn(server, port);
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                // Answered by this node, not by whatever else took the port meanwhile (another
                // test's Redis, a container's published port).
                let ours = query(port, &["INFO", "server"]).is_ok_and(|info| {
                    info.lines()
                        .any(|l| l.trim() == format!("process_id:{}", child.id()))
                });
                if ours {
                    return Node {
                        port,
                        child: Some(child),
                        frozen: None,
                    };
                }
                let exited = matches!(child.try_wait(), Ok(Some(_)));
                if exited || Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    let data = self.dir.join(port.to_string());
                    last_log = std::fs::read_to_string(data.join("redis.log")).unwrap_or_default();
                    let _ = std::fs::remove_dir_all(&data);
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("a Redis Cluster node did not start in five tries; its last log:\n{last_log}");
    }

    fn spawn(&self, server: &std::path::Path, port: u16) -> Child {
        let data = self.dir.join(port.to_string());
        std::fs::create_dir_all(&data).expect("a node directory");
        let bus = crate::free_port();
        Command::new(server)
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--protected-mode", "no"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", "nodes.conf"])
            .args(["--cluster-node-timeout", &NODE_TIMEOUT_MS.to_string()])
            .args(["--cluster-port", &bus.to_string()])
            .args(["--cluster-announce-ip", "127.0.0.1"])
            .args(["--appendonly", "yes", "--appendfsync", "everysec"])
            .args(["--save", ""])
            .args(["--dir", data.to_str().expect("a UTF-8 path")])
            .args([
                "--aclfile",
                self.dir.join("users.acl").to_str().expect("a UTF-8 path"),
            ])
            .args(["--logfile", "redis.log"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts")
    }

    /// Waits until every live node reports `cluster_state:ok`, all 16,384 slots are served and
    /// every primary has a connected replica (or has none left).
    pub fn wait_healthy(&self) {
        wait_for(Duration::from_secs(60), || {
            self.live_ports().iter().all(|&p| {
                query(p, &["CLUSTER", "INFO"]).is_ok_and(|i| {
                    i.contains("cluster_state:ok") && i.contains("cluster_slots_ok:16384")
                })
            }) && self.primaries().iter().all(|&p| {
                query(p, &["INFO", "replication"]).is_ok_and(|i| {
                    i.contains("connected_slaves:0")
                        || i.lines()
                            .any(|l| l.starts_with("slave0:") && l.contains("state=online"))
                })
            })
        });
    }

    /// The ports of the six nodes, live or not.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    fn live_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect()
    }

    /// Every node as `127.0.0.1:<port>`, comma-separated.
    fn seeds(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        nodes.join(",")
    }

    /// The cluster's URL as the services take it: every node as a seed.
    pub fn url(&self) -> String {
        format!("redis+cluster://{}", self.seeds())
    }

    /// [`RedisCluster::url`] logged in as one of the services' ACL users
    /// (`deploy/redis/acl.conf`, as [`crate::redis()`] loads it), with its test password.
    pub fn url_as(&self, user: &str) -> String {
        format!(
            "redis+cluster://{user}:{}@{}",
            crate::acl_password(user),
            self.seeds()
        )
    }

    /// `redis://127.0.0.1:<port>` of one node (for commands to that node only, as the
    /// `default` user, who may do anything).
    pub fn node_url(port: u16) -> String {
        format!("redis://127.0.0.1:{port}")
    }

    /// The ports of the live primaries, as the first live node sees them.
    pub fn primaries(&self) -> Vec<u16> {
        self.topology()
            .into_iter()
            .filter(|n| n.primary && !n.failed)
            .map(|n| n.port)
            .collect()
    }

    /// The port of the primary serving `slot`.
    pub fn owner(&self, slot: u16) -> u16 {
        self.topology()
            .into_iter()
            .find(|n| n.primary && !n.failed && n.slots.iter().any(|r| r.contains(&slot)))
            .map(|n| n.port)
            .expect("every slot has a primary")
    }

    /// Every node as the first live node sees it (`CLUSTER NODES`).
    fn topology(&self) -> Vec<NodeInfo> {
        let port = self.live_ports()[0];
        let text = query(port, &["CLUSTER", "NODES"]).expect("CLUSTER NODES");
        text.lines().filter_map(NodeInfo::parse).collect()
    }

    fn id_of(&self, port: u16) -> String {
        query(port, &["CLUSTER", "MYID"]).expect("CLUSTER MYID")
    }

    /// Moves `slot` from its primary to the primary at `to`, the way `redis-cli --cluster
    /// reshard` does (`SETSLOT … IMPORTING/MIGRATING`, `MIGRATE` of its keys in batches of
    /// `batch`, then `SETSLOT … NODE` on every primary), sleeping `pause` after marking the slot
    /// and between batches, so that clients meet `ASK` and `MOVED` while it moves. Returns how
    /// many keys moved.
    ///
    /// # Panics
    /// When a step fails.
    pub fn migrate_slot(&self, slot: u16, to: u16, batch: usize, pause: Duration) -> usize {
        let from = self.owner(slot);
        assert_ne!(from, to, "slot {slot} is on {to} already");
        let (from_id, to_id) = (self.id_of(from), self.id_of(to));
        let s = slot.to_string();
        query(to, &["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id]).expect("IMPORTING");
        query(from, &["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id]).expect("MIGRATING");
        std::thread::sleep(pause);
        let mut moved = 0;
        loop {
            let keys = query_list(from, &["CLUSTER", "GETKEYSINSLOT", &s, &batch.to_string()])
                .expect("GETKEYSINSLOT");
            if keys.is_empty() {
                break;
            }
            let to_port = to.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &to_port, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().map(String::as_str));
            query(from, &args).expect("MIGRATE");
            moved += keys.len();
            std::thread::sleep(pause);
        }
        for p in [to, from] {
            query(p, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]).expect("SETSLOT NODE");
        }
        for p in self.primaries() {
            if p != to && p != from {
                let _ = query(p, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]);
            }
        }
        moved
    }

    /// Hands the slots of the primary at `primary` to its replica with a manual failover
    /// (`CLUSTER FAILOVER` on the replica: the primary stops taking writes, the replica catches
    /// up, then takes over; nothing acknowledged is lost). Returns the new primary's port.
    ///
    /// # Panics
    /// When the primary has no replica or the failover does not happen within 30 s.
    pub fn failover(&self, primary: u16) -> u16 {
        let replica = self.replica_of(primary);
        query(replica, &["CLUSTER", "FAILOVER"]).expect("CLUSTER FAILOVER");
        wait_for(Duration::from_secs(30), || {
            query(replica, &["ROLE"]).is_ok_and(|r| r.starts_with("master"))
        });
        self.wait_healthy();
        replica
    }

    /// Stops the primary at `primary` with SIGSTOP, as a host that loses power or is cut off
    /// would look: its connections stay open and silent, nothing closes them. Waits until its
    /// replica is elected and the cluster serves every slot again; returns the new primary's
    /// port. The frozen node is killed with the cluster.
    ///
    /// # Panics
    /// When no replica takes over within 30 s.
    pub fn freeze_primary(&mut self, primary: u16) -> u16 {
        self.lose_primary(primary, |child| {
            let stopped = Command::new("kill")
                .args(["-STOP", &child.id().to_string()])
                .status()
                .is_ok_and(|s| s.success());
            assert!(stopped, "kill -STOP of the node at {primary}");
            Some(child)
        })
    }

    /// Kills the primary at `primary` (SIGKILL: what it had not replicated yet is lost, as
    /// Redis's asynchronous replication allows) and waits until its replica is elected and the
    /// cluster serves every slot again. Returns the new primary's port.
    ///
    /// # Panics
    /// When no replica takes over within 30 s.
    pub fn kill_primary(&mut self, primary: u16) -> u16 {
        self.lose_primary(primary, |mut child| {
            let _ = child.kill();
            let _ = child.wait();
            None
        })
    }

    /// Ends the primary at `primary`'s process by `end` (which gives back a process to keep, a
    /// frozen one, to be killed with the cluster), then waits until its replica is elected and
    /// the cluster serves every slot again. Returns the new primary's port.
    fn lose_primary(&mut self, primary: u16, end: impl FnOnce(Child) -> Option<Child>) -> u16 {
        let replica = self.replica_of(primary);
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.port == primary)
            .expect("a node of this cluster");
        if let Some(child) = node.child.take() {
            node.frozen = end(child);
        }
        wait_for(Duration::from_secs(30), || {
            query(replica, &["ROLE"]).is_ok_and(|r| r.starts_with("master"))
        });
        self.wait_healthy();
        replica
    }

    /// Deletes every key on every primary (`FLUSHALL`), for tests that share one cluster.
    ///
    /// # Panics
    /// When a primary cannot be reached.
    pub fn flush_all(&self) {
        for p in self.primaries() {
            query(p, &["FLUSHALL"]).expect("FLUSHALL");
        }
    }

    /// The port of the replica of the primary at `primary`.
    fn replica_of(&self, primary: u16) -> u16 {
        let id = self.id_of(primary);
        self.topology()
            .into_iter()
            .find(|n| n.primary_id.as_deref() == Some(id.as_str()) && !n.failed)
            .map(|n| n.port)
            .expect("the primary has a replica")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            // SIGKILL ends a stopped process too.
            for mut child in n.child.take().into_iter().chain(n.frozen.take()) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One line of `CLUSTER NODES`.
struct NodeInfo {
    port: u16,
    primary: bool,
    failed: bool,
    primary_id: Option<String>,
    slots: Vec<std::ops::RangeInclusive<u16>>,
}

impl NodeInfo {
    fn parse(line: &str) -> Option<NodeInfo> {
        let f: Vec<&str> = line.split_whitespace().collect();
        let addr = f.get(1)?.split('@').next()?;
        let port = addr.rsplit(':').next()?.parse().ok()?;
        let flags = f.get(2)?;
        let slots = f
            .iter()
            .skip(8)
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((a, b)) => Some(a.parse().ok()?..=b.parse().ok()?),
                None => {
                    let one = s.parse().ok()?;
                    Some(one..=one)
                }
            })
            .collect();
        Some(NodeInfo {
            port,
            primary: flags.contains("master"),
            failed: flags.contains("fail"),
            primary_id: f.get(3).filter(|id| **id != "-").map(|id| (*id).to_owned()),
            slots,
        })
    }
}

/// A command to one node, its reply as text (a status, a bulk string or a number).
fn query(port: u16, args: &[&str]) -> redis::RedisResult<String> {
    let v: redis::Value = run(port, args)?;
    Ok(match v {
        redis::Value::SimpleString(s) => s,
        redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        redis::Value::Int(n) => n.to_string(),
        redis::Value::Okay => "OK".to_owned(),
        redis::Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                redis::Value::SimpleString(s) => s,
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => format!("{other:?}"),
    })
}

/// A command to one node whose reply is a list of strings.
fn query_list(port: u16, args: &[&str]) -> redis::RedisResult<Vec<String>> {
    run(port, args)
}

/// A command to one node (a connection of its own, 2 s to connect), its reply as `T`.
fn run<T: redis::FromRedisValue>(port: u16, args: &[&str]) -> redis::RedisResult<T> {
    let client = redis::Client::open(RedisCluster::node_url(port))?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn)
}

fn wait_for(within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "the Redis Cluster did not get there in {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_whose_port_was_taken_starts_on_another() {
        let (server, _) = binaries();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = taken.local_addr().expect("its address").port();
        let dir = std::env::temp_dir().join(format!(
            "arbiter-cluster-node-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        std::fs::write(dir.join("users.acl"), crate::render_acl()).expect("the ACL file");
        let mut cluster = RedisCluster {
            dir,
            nodes: Vec::new(),
        };
        let node = cluster.start_node(&server, port);
        assert_ne!(node.port, port, "the taken port cannot be the node's");
        let pong = query(node.port, &["PING"]).expect("the node answers");
        cluster.nodes.push(node);
        assert_eq!(pong, "PONG");
    }
}
