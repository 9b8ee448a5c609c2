// The scheduler's ready queue in the programmable logic: 256 priorities,
// a FIFO of thread slots at each, and a priority encoder over the
// non-empty FIFOs, behind an AXI4-Lite slave. It behaves as
// partita_core::scheduler::readyq::ReadyQueue<SLOTS>; docs/hardware.md
// gives the register map.
//
// Like the seL4 hardware scheduler (Kroh and Diessel), one transaction is
// one operation: the priority and the operation travel in the address, the
// thread in the data. Unlike its FIFOs, the lists here are linked through
// one table indexed by slot, so a slot can also leave from the middle of
// its FIFO (a thread that blocks) in constant time, and storage grows with
// the number of threads rather than 256 times it.
//
// Storage, all simple dual-port RAM with a synchronous read (block RAM or
// LUT RAM, as the tools see fit):
//   head[256], tail[256]      the ends of each priority's FIFO
//   next[SLOTS], prev[SLOTS]  each queued slot's neighbours
//   prio[SLOTS]               the priority a slot is queued at
// and in flip-flops the 256-bit map of non-empty FIFOs and one "queued"
// bit per slot, which reset must clear in one cycle.
//
// A FIFO's head never has its prev read, nor its tail its next: whether a
// slot is the head or the tail is found by comparing it with head[p] and
// tail[p]. So an enqueue writes each RAM at most once, and every operation
// finishes in a fixed number of cycles whatever the priorities involved.

`default_nettype none

module ready_queue #(
    // Thread slots 0..SLOTS-1; at most 4096 (the remove window's 12 bits).
    parameter integer SLOTS = 64
) (
`include "axi_lite_ports.vh"
);
    localparam integer SW = (SLOTS > 1) ? $clog2(SLOTS) : 1;

    localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10;
    // Read results: bit 31 says there was no slot to return.
    localparam [31:0] NONE = 32'h8000_0000;
    localparam [31:0] RESERVED = 32'h4000_0000;
    // STATUS after an enqueue, the codes of QueueError.
    localparam [1:0] ST_OK = 2'd0, ST_NO_SUCH_SLOT = 2'd1, ST_ALREADY_QUEUED = 2'd2;

    localparam [2:0] IDLE = 3'd0, ENQ = 3'd1, POP_HEAD = 3'd2, REM_PRIO = 3'd3, UNLINK = 3'd4;

`include "axi_lite_slave.vh"

    reg [2:0] state;

    // The operation in flight.
    reg [31:0] slot_word;  // a write's data, or the remove window's slot
    reg [7:0]  p;
    reg        front;
    reg        peek;
    reg [SW-1:0] s;

    // Storage.
    reg [SW-1:0] head_mem [0:255];
    reg [SW-1:0] tail_mem [0:255];
    reg [SW-1:0] next_mem [0:SLOTS-1];
    reg [SW-1:0] prev_mem [0:SLOTS-1];
    reg [7:0]    prio_mem [0:SLOTS-1];
    reg [255:0]     nonempty;
    reg [SLOTS-1:0] queued;
    reg [1:0]       status;

    // Synchronous read ports, held while their enable is low.
    reg [SW-1:0] head_q, tail_q, next_q, prev_q;
    reg [7:0]    prio_q;

    // The encoder's answer, registered so the 256-bit search is off the
    // path from the bus to the RAM addresses. The map changes only in a
    // cycle that ends an operation, and the port accepts nothing in the
    // cycle after, so top is current whenever a command arrives.
    reg [7:0] top;
    reg       any;
    wire [7:0] top_next;
    wire       any_next;
    priority_encoder_256 encoder (.bits(nonempty), .top(top_next), .any(any_next));
    always @(posedge aclk) begin
        top <= top_next;
        any <= any_next;
    end

    // Address decode. FIFO window: [2] head, [10:3] priority, [11] P (use
    // the encoder), [12] peek; [14:13] = 0. Register window: [14:13] = 01.
    // Remove window: [14] = 1, [13:2] the slot.
    wire cmd_fifo   = cmd_addr[14:13] == 2'b00;
    wire cmd_regs   = cmd_addr[14:13] == 2'b01;
    wire cmd_remove = cmd_addr[14];
    wire cmd_pop    = cmd_fifo && cmd_addr[11];

    // Which FIFO ends to read: the address's for an enqueue, the
    // encoder's for a pop, the slot's own priority for a remove.
    wire         ends_en   = cmd_valid || state == REM_PRIO;
    wire [7:0]   ends_addr = state == REM_PRIO ? prio_q : cmd_write ? cmd_addr[10:3] : top;
    // Which slot's links to read: the slot a remove names, or the head
    // being popped.
    wire          links_en   = (cmd_valid && !cmd_write && cmd_remove) || state == POP_HEAD;
    wire [SW-1:0] links_addr = state == POP_HEAD ? head_q : cmd_addr[SW+1:2];

    always @(posedge aclk) begin
        if (ends_en) begin
            head_q <= head_mem[ends_addr];
            tail_q <= tail_mem[ends_addr];
        end
        if (links_en) begin
            next_q <= next_mem[links_addr];
            prev_q <= prev_mem[links_addr];
            prio_q <= prio_mem[links_addr];
        end
    end

    wire in_range = slot_word < SLOTS;
    wire accepted = in_range && !queued[s] && !peek;
    wire was_empty = !nonempty[p];
`ifdef BREAK_FIFO_ORDER
    // A deliberately wrong queue: every enqueue goes to the head, so equal
    // priorities come out last in, first out. The shared vectors must
    // catch it.
    wire at_front = 1'b1;
`else
    wire at_front = front;
`endif
    wire is_head = head_q == s;
    wire is_tail = tail_q == s;

    // One write port per RAM, driven by the state that updates it.
    reg          head_we, tail_we, next_we, prev_we;
    reg [SW-1:0] next_wa, prev_wa, head_wd, tail_wd, next_wd, prev_wd;
    always @(posedge aclk) begin
        if (head_we) head_mem[p] <= head_wd;
        if (tail_we) tail_mem[p] <= tail_wd;
        if (next_we) next_mem[next_wa] <= next_wd;
        if (prev_we) prev_mem[prev_wa] <= prev_wd;
        if (state == ENQ && accepted) prio_mem[s] <= p;
    end

    always @* begin
        {head_we, tail_we, next_we, prev_we} = 4'b0;
        head_wd = s;
        tail_wd = s;
        next_wa = tail_q;
        next_wd = s;
        prev_wa = s;
        prev_wd = tail_q;
        case (state)
            ENQ: if (accepted) begin
                if (at_front) begin
                    // s -> old head; the old head's prev is s.
                    head_we = 1'b1;
                    next_we = 1'b1;
                    next_wa = s;
                    next_wd = head_q;
                    prev_we = !was_empty;
                    prev_wa = head_q;
                    prev_wd = s;
                    tail_we = was_empty;
                end else begin
                    // old tail -> s; s's prev is the old tail.
                    tail_we = 1'b1;
                    prev_we = 1'b1;
                    next_we = !was_empty;
                    head_we = was_empty;
                end
            end
            UNLINK: begin
                // Bridge the neighbours; an end that moves needs no link.
                head_we = is_head && !is_tail;
                head_wd = next_q;
                tail_we = is_tail && !is_head;
                tail_wd = prev_q;
                next_we = !is_head && !is_tail;
                next_wa = prev_q;
                next_wd = next_q;
                prev_we = !is_head && !is_tail;
                prev_wa = next_q;
                prev_wd = prev_q;
            end
            default: ;
        endcase
    end

    // The answer, in the cycle an operation ends.
    wire [31:0] found = {8'd0, p, {(16 - SW) {1'b0}}, s};
    always @* begin
        done = 1'b0;
        done_resp = OKAY;
        done_rdata = NONE;
        case (state)
            IDLE: if (cmd_valid && cmd_write && !cmd_fifo) begin
                done = 1'b1;
                done_resp = SLVERR;
            end else if (cmd_valid && !cmd_write && !cmd_pop && !cmd_remove) begin
                done = 1'b1;
                if (cmd_regs && cmd_addr[12:2] == 11'd0) done_rdata = {30'd0, status};
                else if (cmd_regs && cmd_addr[12:2] == 11'd1) done_rdata = SLOTS;
                else {done_resp, done_rdata} = {SLVERR, RESERVED};
            end
            // The paper's masked write does nothing and succeeds.
            ENQ: {done, done_resp} = {1'b1, accepted || peek ? OKAY : SLVERR};
            POP_HEAD: if (!any) done = 1'b1;
            else if (peek) {done, done_rdata} = {1'b1, 8'd0, p, {(16 - SW) {1'b0}}, head_q};
            REM_PRIO: done = !in_range || !queued[s];
            UNLINK: {done, done_rdata} = {1'b1, found};
            default: ;
        endcase
    end

    always @(posedge aclk) begin
        if (!aresetn) begin
            state <= IDLE;
            nonempty <= 256'd0;
            queued <= {SLOTS{1'b0}};
            status <= ST_OK;
        end else case (state)
            IDLE: if (cmd_valid) begin
                slot_word <= cmd_write ? cmd_wdata : {20'd0, cmd_addr[13:2]};
                s <= cmd_write ? cmd_wdata[SW-1:0] : cmd_addr[SW+1:2];
                p <= cmd_write ? cmd_addr[10:3] : top;
                front <= cmd_addr[2];
                peek <= cmd_addr[12];
                if (!done) state <= cmd_write ? ENQ : cmd_remove ? REM_PRIO : POP_HEAD;
            end
            ENQ: begin
                if (!peek) status <= !in_range ? ST_NO_SUCH_SLOT : queued[s] ? ST_ALREADY_QUEUED : ST_OK;
                if (accepted) begin
                    queued[s] <= 1'b1;
                    nonempty[p] <= 1'b1;
                end
                state <= IDLE;
            end
            POP_HEAD: begin
                s <= head_q;
                state <= done ? IDLE : UNLINK;
            end
            REM_PRIO: begin
                p <= prio_q;
                state <= done ? IDLE : UNLINK;
            end
            UNLINK: begin
                queued[s] <= 1'b0;
                if (is_head && is_tail) nonempty[p] <= 1'b0;
                state <= IDLE;
            end
            default: state <= IDLE;
        endcase
    end
endmodule

// The highest set bit of 256, in two levels as the software bitmap has
// them: which group of 16 is the highest non-empty one, then which bit in
// it. The software needs two count-leading-zeros and the loads between
// them; here both levels settle in one cycle.
module priority_encoder_256 (
    input  wire [255:0] bits,
    output wire [7:0]   top,
    output wire         any
);
    wire [15:0] groups;
    genvar g;
    generate
        for (g = 0; g < 16; g = g + 1) begin : group
            assign groups[g] = |bits[g*16 +: 16];
        end
    endgenerate
    wire [3:0] high_group;
    wire [3:0] high_bit;
    priority_encoder_16 level1 (.bits(groups), .top(high_group));
    priority_encoder_16 level2 (.bits(bits[high_group*16 +: 16]), .top(high_bit));
    assign top = {high_group, high_bit};
    assign any = |groups;
endmodule

module priority_encoder_16 (
    input  wire [15:0] bits,
    output reg  [3:0]  top
);
    integer i;
    always @* begin
        top = 4'd0;
        for (i = 0; i < 16; i = i + 1)
            if (bits[i]) top = i[3:0];
    end
endmodule

`default_nettype wire
