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
    input  wire        aclk,
    input  wire        aresetn,

    input  wire [14:0] s_axi_awaddr,
    input  wire        s_axi_awvalid,
    output wire        s_axi_awready,
    input  wire [31:0] s_axi_wdata,
    input  wire [3:0]  s_axi_wstrb,
    input  wire        s_axi_wvalid,
    output wire        s_axi_wready,
    output reg  [1:0]  s_axi_bresp,
    output reg         s_axi_bvalid,
    input  wire        s_axi_bready,

    input  wire [14:0] s_axi_araddr,
    input  wire        s_axi_arvalid,
    output wire        s_axi_arready,
    output reg  [31:0] s_axi_rdata,
    output reg  [1:0]  s_axi_rresp,
    output reg         s_axi_rvalid,
    input  wire        s_axi_rready
);
    localparam integer SW = (SLOTS > 1) ? $clog2(SLOTS) : 1;

    localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10;
    // Read results: bit 31 says there was no slot to return.
    localparam [31:0] NONE = 32'h8000_0000;
    localparam [31:0] RESERVED = 32'h4000_0000;
    // STATUS after an enqueue, the codes of QueueError.
    localparam [1:0] ST_OK = 2'd0, ST_NO_SUCH_SLOT = 2'd1, ST_ALREADY_QUEUED = 2'd2;

    localparam [2:0] IDLE = 3'd0, ENQ = 3'd1, POP_HEAD = 3'd2, REM_PRIO = 3'd3, UNLINK = 3'd4, RESP = 3'd5;

    reg [2:0] state;
    reg       is_read;

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

    // Synchronous read ports, held while their enable is low.
    reg [SW-1:0] head_q, tail_q, next_q, prev_q;
    reg [7:0]    prio_q;

    // The encoder's answer, registered so the 256-bit search is off the
    // path from the bus to the RAM addresses. The map changes only in a
    // cycle that ends an operation, and a response cycle always follows,
    // so top is current whenever a new request is accepted.
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
    wire take_write = state == IDLE && s_axi_awvalid && s_axi_wvalid;
    wire take_read  = state == IDLE && s_axi_arvalid && !take_write;
    assign s_axi_awready = take_write;
    assign s_axi_wready  = take_write;
    assign s_axi_arready = take_read;

    wire ar_fifo   = s_axi_araddr[14:13] == 2'b00;
    wire ar_regs   = s_axi_araddr[14:13] == 2'b01;
    wire ar_remove = s_axi_araddr[14];
    wire ar_pop    = ar_fifo && s_axi_araddr[11];
    wire aw_fifo   = s_axi_awaddr[14:13] == 2'b00;

    // Which FIFO ends to read: the encoder's for a pop, the address's for
    // an enqueue, the slot's own priority for a remove.
    wire         ends_en   = take_write || take_read || state == REM_PRIO;
    wire [7:0]   ends_addr = state == REM_PRIO ? prio_q : take_read ? top : s_axi_awaddr[10:3];
    // Which slot's links to read: the head being popped, or the slot a
    // remove names.
    wire         links_en   = (take_read && ar_remove) || state == POP_HEAD;
    wire [SW-1:0] links_addr = state == POP_HEAD ? head_q : s_axi_araddr[SW+1:2];

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

    // One write port per RAM, driven by the state that updates it.
    reg          head_we, tail_we, next_we, prev_we, prio_we;
    reg [7:0]    head_wa, tail_wa;
    reg [SW-1:0] next_wa, prev_wa, head_wd, tail_wd, next_wd, prev_wd;
    always @(posedge aclk) begin
        if (head_we) head_mem[head_wa] <= head_wd;
        if (tail_we) tail_mem[tail_wa] <= tail_wd;
        if (next_we) next_mem[next_wa] <= next_wd;
        if (prev_we) prev_mem[prev_wa] <= prev_wd;
        if (prio_we) prio_mem[s] <= p;
    end

    wire in_range = slot_word < SLOTS;
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

    always @* begin
        {head_we, tail_we, next_we, prev_we, prio_we} = 5'b0;
        head_wa = p;
        tail_wa = p;
        head_wd = s;
        tail_wd = s;
        next_wa = tail_q;
        next_wd = s;
        prev_wa = s;
        prev_wd = tail_q;
        case (state)
            ENQ: if (in_range && !queued[s] && !peek) begin
                prio_we = 1'b1;
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

    reg [1:0] status;

    task respond_read(input [31:0] data, input [1:0] resp);
        begin
            s_axi_rdata <= data;
            s_axi_rresp <= resp;
            s_axi_rvalid <= 1'b1;
            state <= RESP;
        end
    endtask

    task respond_write(input [1:0] resp);
        begin
            s_axi_bresp <= resp;
            s_axi_bvalid <= 1'b1;
            state <= RESP;
        end
    endtask

    wire [31:0] found = {8'd0, p, {(16 - SW) {1'b0}}, s};

    always @(posedge aclk) begin
        if (!aresetn) begin
            state <= IDLE;
            nonempty <= 256'd0;
            queued <= {SLOTS{1'b0}};
            status <= ST_OK;
            s_axi_bvalid <= 1'b0;
            s_axi_rvalid <= 1'b0;
            s_axi_bresp <= OKAY;
            s_axi_rresp <= OKAY;
            s_axi_rdata <= 32'd0;
        end else case (state)
            IDLE: if (take_write) begin
                slot_word <= s_axi_wdata;
                s <= s_axi_wdata[SW-1:0];
                p <= s_axi_awaddr[10:3];
                front <= s_axi_awaddr[2];
                peek <= s_axi_awaddr[12];
                if (aw_fifo) state <= ENQ;
                else respond_write(SLVERR);
            end else if (take_read) begin
                p <= top;
                peek <= s_axi_araddr[12];
                slot_word <= {20'd0, s_axi_araddr[13:2]};
                s <= s_axi_araddr[SW+1:2];
                if (ar_pop) state <= POP_HEAD;
                else if (ar_remove) state <= REM_PRIO;
                else if (ar_regs && s_axi_araddr[12:2] == 11'd0) respond_read({30'd0, status}, OKAY);
                else if (ar_regs && s_axi_araddr[12:2] == 11'd1) respond_read(SLOTS, OKAY);
                else respond_read(RESERVED, SLVERR);
            end
            ENQ: if (peek) begin
                // The paper's masked write: no side effect.
                respond_write(OKAY);
            end else if (!in_range) begin
                status <= ST_NO_SUCH_SLOT;
                respond_write(SLVERR);
            end else if (queued[s]) begin
                status <= ST_ALREADY_QUEUED;
                respond_write(SLVERR);
            end else begin
                status <= ST_OK;
                queued[s] <= 1'b1;
                nonempty[p] <= 1'b1;
                respond_write(OKAY);
            end
            POP_HEAD: if (!any) begin
                respond_read(NONE, OKAY);
            end else if (peek) begin
                respond_read({8'd0, p, {(16 - SW) {1'b0}}, head_q}, OKAY);
            end else begin
                s <= head_q;
                state <= UNLINK;
            end
            REM_PRIO: if (!in_range || !queued[s]) begin
                respond_read(NONE, OKAY);
            end else begin
                p <= prio_q;
                state <= UNLINK;
            end
            UNLINK: begin
                queued[s] <= 1'b0;
                if (is_head && is_tail) nonempty[p] <= 1'b0;
                respond_read(found, OKAY);
            end
            RESP: begin
                if (s_axi_bvalid && s_axi_bready) s_axi_bvalid <= 1'b0;
                if (s_axi_rvalid && s_axi_rready) s_axi_rvalid <= 1'b0;
                if ((s_axi_bvalid && s_axi_bready) || (s_axi_rvalid && s_axi_rready)) state <= IDLE;
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
