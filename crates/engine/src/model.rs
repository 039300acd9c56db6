//! Load models: when may a free connection take the next request.

/// Closed loop: a free connection takes the next request at once, until the budget is spent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClosedLoop {
    remaining: Option<u64>,
}

impl ClosedLoop {
    pub fn new(budget: Option<u64>) -> Self {
        ClosedLoop { remaining: budget }
    }

    /// Takes one request from the budget; false when it is spent.
    #[inline]
    pub fn take(&mut self) -> bool {
        match &mut self.remaining {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    /// No request is left to start.
    pub fn exhausted(&self) -> bool {
        self.remaining == Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_exact() {
        let mut m = ClosedLoop::new(Some(3));
        assert_eq!((0..10).filter(|_| m.take()).count(), 3);
        assert!(m.exhausted());
        let mut unlimited = ClosedLoop::new(None);
        assert!((0..1000).all(|_| unlimited.take()));
        assert!(!unlimited.exhausted());
        assert!(ClosedLoop::new(Some(0)).exhausted());
    }
}
