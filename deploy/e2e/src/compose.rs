//! The compose topology under test, driven through the `docker` and `docker-compose` commands:
//! up, down, and the faults (kill, stop and start, network cut).
//!
//! [`Topology::up`] hands back a guard that takes everything down when dropped, on a failed
//! check or a panic too, and [`Topology::down`] checks that no container, network or volume of
//! the project is left.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The compose project of the test (its own name, so a topology left running by hand under the
/// default name is not touched; it does use the same published ports).
pub const PROJECT: &str = "arbitere2e";

/// What of a compose project Docker lists.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Container,
    Volume,
    Network,
}

/// A running compose project.
#[derive(Debug)]
pub struct Topology {
    root: PathBuf,
    down: bool,
}

/// Runs a command, returning its standard output, or an error with its standard error.
fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "{shown} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        ))
    }
}

impl Topology {
    /// Makes the development secrets and the images (each script skips what is done already),
    /// then starts the project and waits until every container is healthy.
    ///
    /// # Errors
    /// A script or command that failed, or a container not healthy within `timeout` (with its
    /// state and last log lines).
    pub fn up(root: PathBuf, timeout: Duration) -> Result<Topology, String> {
        let sh = |script: &str| run(Command::new("bash").arg(script).current_dir(&root));
        sh("deploy/dev-secrets.sh")?;
        let built = sh("deploy/build-images.sh")?;
        println!("{built}");
        let topology = Topology { root, down: false };
        // Anything left by an interrupted earlier run goes first (a network Docker will not
        // remove is adopted by `up`).
        topology.teardown()?;
        topology.compose(&["up", "-d"])?;
        topology.wait_all_healthy(timeout)?;
        Ok(topology)
    }

    fn compose(&self, args: &[&str]) -> Result<String, String> {
        run(Command::new("docker-compose")
            .args(["-p", PROJECT, "-f", "deploy/compose.yaml"])
            .args(args)
            .current_dir(&self.root))
    }

    /// The container id of a compose service.
    ///
    /// # Errors
    /// When the service has no container.
    pub fn container(&self, service: &str) -> Result<String, String> {
        let id = self.compose(&["ps", "-q", service])?;
        if id.is_empty() {
            Err(format!("no container for {service}"))
        } else {
            Ok(id)
        }
    }

    fn docker(&self, args: &[&str]) -> Result<String, String> {
        run(Command::new("docker").args(args))
    }

    /// `docker kill` (SIGKILL) a service's container.
    ///
    /// # Errors
    /// When docker fails.
    pub fn kill(&self, service: &str) -> Result<(), String> {
        self.docker(&["kill", &self.container(service)?]).map(drop)
    }

    /// `docker stop`: SIGTERM, then up to 40 s (the compose file's grace period) to exit.
    ///
    /// # Errors
    /// When docker fails.
    pub fn stop(&self, service: &str) -> Result<(), String> {
        self.docker(&["stop", "-t", "40", &self.container(service)?])
            .map(drop)
    }

    /// `docker start` a stopped or killed container.
    ///
    /// # Errors
    /// When docker fails.
    pub fn start(&self, service: &str) -> Result<(), String> {
        self.docker(&["start", &self.container(service)?]).map(drop)
    }

    /// Whether a service's container is running.
    ///
    /// # Errors
    /// When docker fails.
    pub fn running(&self, service: &str) -> Result<bool, String> {
        let id = self.container(service)?;
        Ok(self.docker(&["inspect", "-f", "{{.State.Running}}", &id])? == "true")
    }

    /// Cuts a service's container off one of the project's networks (`backend`, `frontend`).
    ///
    /// # Errors
    /// When docker fails.
    pub fn disconnect(&self, service: &str, network: &str) -> Result<(), String> {
        let net = format!("{PROJECT}_{network}");
        self.docker(&["network", "disconnect", &net, &self.container(service)?])
            .map(drop)
    }

    /// Connects a service's container to a network again, under its service name as compose
    /// does (a plain `docker network connect` would drop that DNS alias).
    ///
    /// # Errors
    /// When docker fails.
    pub fn connect(&self, service: &str, network: &str) -> Result<(), String> {
        let net = format!("{PROJECT}_{network}");
        let id = self.container(service)?;
        self.docker(&["network", "connect", "--alias", service, &net, &id])
            .map(drop)
    }

    /// The Docker health of a service's container (`healthy`, `starting`, `unhealthy`, or the
    /// container's status when it is not running).
    ///
    /// # Errors
    /// When docker fails.
    pub fn health(&self, service: &str) -> Result<String, String> {
        let id = self.container(service)?;
        self.docker(&[
            "inspect",
            "-f",
            "{{if .State.Running}}{{if .State.Health}}{{.State.Health.Status}}{{else}}running{{end}}{{else}}{{.State.Status}}{{end}}",
            &id,
        ])
    }

    /// Waits until the named services' containers report healthy.
    ///
    /// # Errors
    /// The states and logs of those that are not, after `timeout`.
    pub fn wait_healthy(&self, services: &[&str], timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut waiting = Vec::new();
            for s in services {
                let h = self.health(s)?;
                if h != "healthy" {
                    waiting.push(format!("{s}: {h}"));
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let mut report = format!("not healthy after {timeout:?}: {}", waiting.join(", "));
                for s in services {
                    if let Ok(id) = self.container(s) {
                        let logs = run(Command::new("docker").args(["logs", "--tail", "15", &id]))
                            .unwrap_or_else(|e| e);
                        report.push_str(&format!("\n--- {s}\n{logs}"));
                    }
                }
                return Err(report);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Waits until every service of the project is healthy.
    ///
    /// # Errors
    /// As [`Topology::wait_healthy`].
    pub fn wait_all_healthy(&self, timeout: Duration) -> Result<(), String> {
        let services = self.services()?;
        let services: Vec<&str> = services.iter().map(String::as_str).collect();
        self.wait_healthy(&services, timeout)
    }

    /// The project's compose services.
    ///
    /// # Errors
    /// When docker-compose fails.
    pub fn services(&self) -> Result<Vec<String>, String> {
        Ok(self
            .compose(&["config", "--services"])?
            .lines()
            .map(str::to_owned)
            .collect())
    }

    /// Prints every container's state and last log lines (after a failed check).
    pub fn logs(&self) {
        match self.compose(&["ps"]) {
            Ok(ps) => eprintln!("{ps}"),
            Err(e) => eprintln!("e2e: {e}"),
        }
        match self.compose(&["logs", "--no-color", "--tail", "25"]) {
            Ok(logs) => eprintln!("{logs}"),
            Err(e) => eprintln!("e2e: {e}"),
        }
    }

    /// `down -v --remove-orphans`, then what Docker's endpoint bookkeeping needs when it refuses
    /// to remove a network. Returns the project networks Docker would not remove although they
    /// hold no container (see [`Topology::leaked_networks`]); everything else of the project is
    /// gone when this returns `Ok`.
    ///
    /// Docker's network store can keep an endpoint of a container that no longer exists (a
    /// daemon bug, met in about one run in eight, always on `backend`, the network of the
    /// cut): removing the network then fails with "has active endpoints" although `docker
    /// network inspect` lists no container. A stale endpoint goes with `docker network
    /// disconnect --force` under the container's name, so that is tried for every container
    /// name the project can have, and `down` runs again, three times two seconds apart. When
    /// Docker still refuses, its count of the network's endpoints has leaked (no endpoint is left
    /// to disconnect) and only a restart of the daemon clears it: the network is then left,
    /// reported, and reused by the next `up` (compose adopts a network of the project's name and
    /// labels), so it neither stops nor disturbs a later run.
    fn teardown(&self) -> Result<Vec<String>, String> {
        let first = match self.compose(&["down", "-v", "--remove-orphans"]) {
            Ok(_) => return Ok(Vec::new()),
            Err(e) if e.contains("has active endpoints") => e,
            Err(e) => return Err(e),
        };
        let cleared = self.clear_stale_endpoints()?;
        println!(
            "e2e: down -v met a stale Docker endpoint ({}); forced off: {}",
            first.lines().last().unwrap_or_default(),
            if cleared.is_empty() {
                "nothing".to_owned()
            } else {
                cleared.join(", ")
            }
        );
        for _ in 0..3 {
            match self.compose(&["down", "-v", "--remove-orphans"]) {
                Ok(_) => return Ok(Vec::new()),
                Err(e) if e.contains("has active endpoints") => {
                    std::thread::sleep(Duration::from_secs(2));
                }
                Err(e) => return Err(e),
            }
        }
        let leaked = self.leaked_networks()?;
        println!(
            "e2e: Docker keeps network {} with no container but a leaked endpoint count (a \
             daemon bug; a restart of the Docker daemon removes it); the next run reuses it",
            leaked.join(", ")
        );
        Ok(leaked)
    }

    /// After `down` failed on a network with "has active endpoints" and nothing could be
    /// disconnected: checks that no container of the project is left, removes every project
    /// network Docker lets go and every project volume (compose stops at the first network it
    /// cannot remove, before the volumes), and returns the networks left, each of which must
    /// list no container.
    ///
    /// # Errors
    /// A container of the project still there, a left network that lists a container, or any
    /// other refusal.
    fn leaked_networks(&self) -> Result<Vec<String>, String> {
        let containers = self.project(Kind::Container)?;
        if !containers.is_empty() {
            return Err(format!(
                "down -v left containers: {}",
                containers.join(", ")
            ));
        }
        let mut leaked = Vec::new();
        for net in self.project(Kind::Network)? {
            match self.docker(&["network", "rm", &net]) {
                Ok(_) => {}
                Err(e) if e.contains("has active endpoints") => {
                    let attached =
                        self.docker(&["network", "inspect", "-f", "{{len .Containers}}", &net])?;
                    if attached != "0" {
                        return Err(format!("{net} still has {attached} containers: {e}"));
                    }
                    leaked.push(net);
                }
                Err(e) => return Err(e),
            }
        }
        for volume in self.project(Kind::Volume)? {
            self.docker(&["volume", "rm", &volume])?;
        }
        Ok(leaked)
    }

    /// The project's containers (ids), volumes or networks (names), by compose's project label.
    fn project(&self, kind: Kind) -> Result<Vec<String>, String> {
        let label = format!("label=com.docker.compose.project={PROJECT}");
        let args: &[&str] = match kind {
            Kind::Container => &["ps", "-aq", "--filter", &label],
            Kind::Volume => &["volume", "ls", "-q", "--filter", &label],
            Kind::Network => &["network", "ls", "--filter", &label, "--format", "{{.Name}}"],
        };
        Ok(self.docker(args)?.lines().map(str::to_owned).collect())
    }

    /// Force-disconnects, from each of the project's networks, every endpoint it lists and every
    /// container name compose gives the project's services (`<project>_<service>_1`). Returns
    /// `network: name` for each that went.
    fn clear_stale_endpoints(&self) -> Result<Vec<String>, String> {
        let services = self.services()?;
        let mut cleared = Vec::new();
        for net in self.project(Kind::Network)? {
            let listed = self
                .docker(&[
                    "network",
                    "inspect",
                    "-f",
                    "{{range .Containers}}{{.Name}}\n{{end}}",
                    &net,
                ])
                .unwrap_or_default();
            let mut names: Vec<String> = listed.lines().map(str::to_owned).collect();
            names.extend(services.iter().map(|s| format!("{PROJECT}_{s}_1")));
            names.sort();
            names.dedup();
            for name in names.iter().filter(|n| !n.is_empty()) {
                if self
                    .docker(&["network", "disconnect", "--force", &net, name])
                    .is_ok()
                {
                    cleared.push(format!("{net}: {name}"));
                }
            }
        }
        Ok(cleared)
    }

    /// Takes the project down (`down -v`) and checks that nothing of it is left: no container,
    /// no volume, no network but one Docker keeps with a leaked endpoint count (reported, and
    /// holding no container: see the teardown's comment).
    ///
    /// # Errors
    /// When `down` fails or something is left.
    pub fn down(mut self) -> Result<(), String> {
        self.down = true;
        let leaked = self.teardown()?;
        let mut left = Vec::new();
        for (kind, name) in [(Kind::Container, "container"), (Kind::Volume, "volume")] {
            left.extend(self.project(kind)?.iter().map(|id| format!("{name} {id}")));
        }
        for net in self.project(Kind::Network)? {
            if !leaked.contains(&net) {
                left.push(format!("network {net}"));
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("down -v left behind: {}", left.join(", ")))
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if !self.down {
            eprintln!("e2e: taking the topology down after a failure");
            if let Err(e) = self.teardown() {
                eprintln!("e2e: {e}");
            }
        }
    }
}
