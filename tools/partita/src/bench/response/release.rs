//! Δ_VM^relEv (Ker-ONE eq. 3): the RTOS's tick-to-released-task latency.
