//! Scheduling: the decisions (who runs, who gives way, who migrates), the
//! fixed-priority ready queue, cyclic plans, and the
//! budget meter that times each vCPU's use of its pCPU.

pub mod budget;
pub mod cyclic;
pub mod decide;
pub mod readyq;
