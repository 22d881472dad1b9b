//! The dev IdP's password guard behind a public URL: failed guesses counted per client and in
//! all, each logged; past [`MAX_FAILURES_PER_CLIENT`] from one client, or
//! [`MAX_FAILURES_TOTAL`] from everyone, in one [`WINDOW`], sign-in is refused until the window
//! ends, the right password included (so a locked guesser learns nothing). A correct password
//! earns a short-lived pass, and only a pass shows the demo users.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed guesses one client may make in a window.
pub const MAX_FAILURES_PER_CLIENT: u32 = 5;
/// Failed guesses all clients together may make in a window.
pub const MAX_FAILURES_TOTAL: u32 = 50;
/// The window guesses are counted in.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// How long a pass (the password given, the user not picked yet) lasts.
pub const PASS_TTL: Duration = Duration::from_secs(5 * 60);
/// The most clients and passes remembered; past it, new ones are refused until some expire.
const MAX_ENTRIES: usize = 10_000;

/// Failures in one window.
#[derive(Clone, Copy)]
struct Count {
    failures: u32,
    since: Instant,
}

impl Count {
    fn fresh(now: Instant) -> Count {
        Count {
            failures: 0,
            since: now,
        }
    }

    fn current(self, now: Instant) -> Count {
        if now.duration_since(self.since) >= WINDOW {
            Count::fresh(now)
        } else {
            self
        }
    }
}

/// Why a sign-in was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The wrong password (or none).
    Wrong,
    /// Too many wrong guesses: try again after this long.
    Locked(Duration),
}

/// Guesses and passes.
pub struct Guard {
    state: Mutex<State>,
}

struct State {
    total: Count,
    clients: HashMap<IpAddr, Count>,
    passes: HashMap<String, Instant>,
}

impl Default for Guard {
    fn default() -> Self {
        let now = Instant::now();
        Guard {
            state: Mutex::new(State {
                total: Count::fresh(now),
                clients: HashMap::new(),
                passes: HashMap::new(),
            }),
        }
    }
}

impl Guard {
    /// Judges `client`'s guess, `right` telling whether it was the password.
    pub fn guess(&self, client: IpAddr, right: bool) -> Result<(), Refusal> {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.total = s.total.current(now);
        if s.clients.len() >= MAX_ENTRIES {
            s.clients
                .retain(|_, c| now.duration_since(c.since) < WINDOW);
        }
        let known = s.clients.contains_key(&client);
        if !known && s.clients.len() >= MAX_ENTRIES {
            return Err(Refusal::Locked(WINDOW));
        }
        let mine = s
            .clients
            .get(&client)
            .copied()
            .unwrap_or(Count::fresh(now))
            .current(now);
        let left = |c: Count| WINDOW.saturating_sub(now.duration_since(c.since));
        if mine.failures >= MAX_FAILURES_PER_CLIENT {
            return Err(Refusal::Locked(left(mine)));
        }
        if s.total.failures >= MAX_FAILURES_TOTAL {
            return Err(Refusal::Locked(left(s.total)));
        }
        if right {
            return Ok(());
        }
        let mine = Count {
            failures: mine.failures + 1,
            ..mine
        };
        s.clients.insert(client, mine);
        s.total.failures += 1;
        tracing::warn!(
            %client,
            failures = mine.failures,
            failures_total = s.total.failures,
            "dev IdP: wrong sign-in password"
        );
        Err(Refusal::Wrong)
    }

    /// A new pass for a sign-in whose password was right.
    pub fn issue_pass(&self, pass: String) -> Option<String> {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.passes.retain(|_, at| now.duration_since(*at) < PASS_TTL);
        if s.passes.len() >= MAX_ENTRIES {
            return None;
        }
        s.passes.insert(pass.clone(), now);
        Some(pass)
    }

    /// Whether `pass` is a live pass; `consume` ends it.
    pub fn has_pass(&self, pass: &str, consume: bool) -> bool {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let live = s
            .passes
            .get(pass)
            .is_some_and(|at| now.duration_since(*at) < PASS_TTL);
        if consume || !live {
            s.passes.remove(pass);
        }
        live
    }
}

#[cfg(test)]
mod tests {
    use super::{Guard, Refusal, MAX_FAILURES_PER_CLIENT, MAX_FAILURES_TOTAL};
    use std::net::IpAddr;

    #[test]
    fn a_guesser_is_locked_out_even_with_the_right_password_and_others_are_not() {
        // Arrange
        let guard = Guard::default();
        let (guesser, other): (IpAddr, IpAddr) = (
            "203.0.113.7".parse().unwrap(),
            "198.51.100.1".parse().unwrap(),
        );

        // Act
        let wrong: Vec<_> = (0..MAX_FAILURES_PER_CLIENT)
            .map(|_| guard.guess(guesser, false))
            .collect();
        let then_right = guard.guess(guesser, true);
        let others = guard.guess(other, true);

        // Assert
        assert!(wrong.iter().all(|r| *r == Err(Refusal::Wrong)));
        assert!(
            matches!(then_right, Err(Refusal::Locked(_))),
            "{then_right:?}"
        );
        assert_eq!(others, Ok(()));
    }

    #[test]
    fn many_clients_guessing_together_lock_sign_in_for_everyone() {
        // Arrange
        let guard = Guard::default();

        // Act
        for n in 0..MAX_FAILURES_TOTAL {
            let client: IpAddr = format!("10.0.{}.{}", n / 200, n % 200).parse().unwrap();
            assert_eq!(guard.guess(client, false), Err(Refusal::Wrong));
        }
        let fresh = guard.guess("192.0.2.1".parse().unwrap(), true);

        // Assert
        assert!(matches!(fresh, Err(Refusal::Locked(_))), "{fresh:?}");
    }

    #[test]
    fn a_pass_is_good_once_it_is_consumed_and_never_when_unknown() {
        let guard = Guard::default();
        let pass = guard.issue_pass("p".into()).unwrap();
        assert!(guard.has_pass(&pass, false));
        assert!(guard.has_pass(&pass, true));
        assert!(!guard.has_pass(&pass, true));
        assert!(!guard.has_pass("forged", false));
    }
}
