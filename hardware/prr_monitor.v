// The PRR monitor's solution search (Ker-ONE section 4.4.1) in the static
// logic, behind an AXI4-Lite slave. It follows
// partita_core::fabric::monitor: search() for one request, and the
// priority-ordered Waiting list with push, solve_next and forget.
// docs/hardware.md gives the register map.
//
// The hypervisor mirrors each PRR descriptor into DESC and SIZE whenever
// the manager changes it, and the compatibility table into COMPAT once at
// boot; a SEARCH read then costs one bus transaction instead of a scan in
// software, and the waiting list lives next to the descriptors it is
// searched against.
//
// The search visits one descriptor per cycle, in PRR order, keeping the
// smallest Idle candidate and the smallest preemptible one whose client is
// of lower priority; a strict "smaller" keeps the lowest index among equal
// sizes, as the model's min_by_key over (size, index) does. It is the
// model's bounded scan: at most 32 cycles, whatever the requests.

`default_nettype none

module prr_monitor #(
    // Entries of the waiting list (the model's Waiting<N>); at most 256.
    parameter integer WAITING = 8,
    // Rows of the compatibility table; a request for an accelerator beyond
    // it finds no compatible PRR.
    parameter integer ACCELS = 16
) (
`include "axi_lite_ports.vh"
);
    localparam integer PRRS = 32;
    localparam integer WB = (WAITING > 1) ? $clog2(WAITING + 1) : 1;

    localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10;
    localparam [31:0] RESERVED = 32'h4000_0000;
    // SOLVE_NEXT with no request a PRR can serve.
    localparam [31:0] NOTHING = 32'hc000_0000;
    localparam [1:0] UNAVAILABLE = 2'd0, ASSIGN = 2'd1, PREEMPT = 2'd2;
    // PrrState codes.
    localparam [2:0] IDLE_PRR = 3'd0, BUSY_PRR = 3'd1, HOLD_PRR = 3'd5;

    localparam [1:0] IDLE = 2'd0, PUSH = 2'd1, SCAN = 2'd2, FORGET = 2'd3;

    // Register window at 0x400.
    localparam [14:0] A_COUNT = 15'h400, A_REQUEST = 15'h404, A_SEARCH = 15'h408, A_PUSH = 15'h40c,
                      A_SOLVE = 15'h410, A_FORGET = 15'h414, A_LEN = 15'h418, A_WAITING = 15'h600;

`include "axi_lite_slave.vh"

    reg [1:0] state;

    // Descriptors: DESC is [2:0] state, [3] an accelerator is loaded,
    // [4] a client holds it, [15:8] the loaded accelerator, [23:16] the
    // client's priority.
    reg [23:0] desc_mem [0:PRRS-1];
    reg [31:0] size_mem [0:PRRS-1];
    reg [31:0] compat_mem [0:ACCELS-1];
    reg [5:0]  count;
    // REQUEST: [7:0] partition, [15:8] device, [23:16] priority,
    // [31:24] accelerator.
    reg [31:0] request;
    // A write's data, kept for the states after the handshake.
    reg [31:0] wdata_q;

    // The waiting list, most urgent first.
    reg [31:0]   waiting [0:WAITING-1];
    reg [WB-1:0] len;

    // The search in flight.
    reg [31:0] req;
    reg [5:0]  i;
    reg        solving;   // for SOLVE_NEXT, else for SEARCH
    reg [WB-1:0] j;       // the waiting entry searched; FORGET's next kept slot
    reg        idle_found, pre_found, idle_same, pre_same;
    reg [31:0] idle_size, pre_size;
    reg [4:0]  idle_prr, pre_prr;

    wire [7:0]  req_prio  = req[23:16];
    wire [7:0]  req_accel = req[31:24];
    wire [31:0] mask = req_accel < ACCELS ? compat_mem[req_accel] : 32'd0;
    wire [23:0] d = desc_mem[i[4:0]];
    wire [31:0] d_size = size_mem[i[4:0]];
    wire d_candidate = mask[i[4:0]];
    wire d_same = d[3] && d[15:8] == req_accel;
`ifdef BREAK_EQUAL_PREEMPTS
    // A deliberately wrong monitor: a client of equal priority is
    // preempted too. The shared vectors must catch it.
    wire d_lower = d[4] && d[23:16] <= req_prio;
`else
    wire d_lower = d[4] && d[23:16] < req_prio;
`endif
    wire d_idle = d[2:0] == IDLE_PRR;
    wire d_preemptible = d[2:0] == BUSY_PRR || d[2:0] == HOLD_PRR;
    wire scanned = i == {1'b0, count};

    wire [1:0]  method = idle_found ? ASSIGN : pre_found ? PREEMPT : UNAVAILABLE;
    wire [4:0]  prr = idle_found ? idle_prr : pre_found ? pre_prr : 5'd0;
    wire        reconfig = idle_found ? !idle_same : pre_found && !pre_same;
    wire [31:0] solution = {method, reconfig, prr, req[31:24], req[15:0]};

    // Where a pushed request goes: after every request of its priority or
    // higher, unless its device is waiting already.
    reg [WB-1:0] at;
    reg          duplicate;
    integer k;
    always @* begin
        at = len;
        duplicate = 1'b0;
        for (k = WAITING - 1; k >= 0; k = k - 1)
            if (k < len && waiting[k][23:16] < wdata_q[23:16]) at = k[WB-1:0];
        for (k = 0; k < WAITING; k = k + 1)
            if (k < len && waiting[k][15:0] == wdata_q[15:0]) duplicate = 1'b1;
    end

    // The tables the bus writes directly.
    wire write_desc   = cmd_valid && cmd_write && cmd_addr[14:8] == 7'd0;
    wire write_compat = cmd_valid && cmd_write && cmd_addr[14:9] == 6'd1 && cmd_addr[8:2] < ACCELS;
    always @(posedge aclk) begin
        if (write_desc && !cmd_addr[2]) desc_mem[cmd_addr[7:3]] <= cmd_wdata[23:0];
        if (write_desc && cmd_addr[2]) size_mem[cmd_addr[7:3]] <= cmd_wdata;
        if (write_compat) compat_mem[cmd_addr[8:2]] <= cmd_wdata;
    end

    wire [14:0] entry = (cmd_addr - A_WAITING) >> 2;
    wire read_entry = cmd_addr >= A_WAITING && entry < WAITING;

    wire needs_state = cmd_write ? cmd_addr == A_PUSH || cmd_addr == A_FORGET
                                 : cmd_addr == A_SEARCH || (cmd_addr == A_SOLVE && len != 0);

    always @* begin
        done = 1'b0;
        done_resp = OKAY;
        done_rdata = 32'd0;
        case (state)
            // A write or a read that needs no search is answered at once.
            IDLE: if (cmd_valid && !needs_state) begin
                done = 1'b1;
                if (cmd_write) begin
                    if (!write_desc && !write_compat && cmd_addr != A_REQUEST
                        && !(cmd_addr == A_COUNT && cmd_wdata <= PRRS)) done_resp = SLVERR;
                end else if (cmd_addr == A_SOLVE) done_rdata = NOTHING;
                else if (cmd_addr == A_COUNT) done_rdata = {26'd0, count};
                else if (cmd_addr == A_LEN) done_rdata = {{(32 - WB) {1'b0}}, len};
                else if (read_entry) done_rdata = entry < len ? waiting[entry] : 32'd0;
                else {done_resp, done_rdata} = {SLVERR, RESERVED};
            end
            PUSH: {done, done_resp} = {1'b1, !duplicate && len == WAITING ? SLVERR : OKAY};
            SCAN: if (scanned && (!solving || method != UNAVAILABLE)) {done, done_rdata} = {1'b1, solution};
            else if (scanned && j + 1'b1 == len) {done, done_rdata} = {1'b1, NOTHING};
            FORGET: done = i == len;
            default: ;
        endcase
    end

    task start_search(input [31:0] r);
        begin
            req <= r;
            i <= 6'd0;
            {idle_found, pre_found} <= 2'b00;
            state <= SCAN;
        end
    endtask

    always @(posedge aclk) begin
        if (!aresetn) begin
            state <= IDLE;
            count <= 6'd0;
            len <= {WB{1'b0}};
            request <= 32'd0;
        end else case (state)
            IDLE: if (cmd_valid) begin
                wdata_q <= cmd_wdata;
                i <= 6'd0;
                j <= {WB{1'b0}};
                solving <= cmd_addr == A_SOLVE;
                if (cmd_write && cmd_addr == A_COUNT && !done_resp[1]) count <= cmd_wdata[5:0];
                if (cmd_write && cmd_addr == A_REQUEST) request <= cmd_wdata;
                if (!done && cmd_write) state <= cmd_addr == A_PUSH ? PUSH : FORGET;
                if (!done && !cmd_write) start_search(cmd_addr == A_SOLVE ? waiting[0] : request);
            end
            PUSH: begin
                if (!duplicate && len != WAITING) begin
                    for (k = WAITING - 1; k > 0; k = k - 1)
                        if (k > at) waiting[k] <= waiting[k-1];
                    waiting[at] <= wdata_q;
                    len <= len + 1'b1;
                end
                state <= IDLE;
            end
            SCAN: if (scanned) begin
                if (solving && method != UNAVAILABLE) begin
                    // Served: it leaves the list.
                    for (k = 0; k < WAITING - 1; k = k + 1)
                        if (k >= j) waiting[k] <= waiting[k+1];
                    len <= len - 1'b1;
                end
                if (done) state <= IDLE;
                else begin
                    j <= j + 1'b1;
                    start_search(waiting[j+1'b1]);
                end
            end else begin
                if (d_candidate && d_idle && (!idle_found || d_size < idle_size)) begin
                    idle_found <= 1'b1;
                    idle_size <= d_size;
                    idle_prr <= i[4:0];
                    idle_same <= d_same;
                end
                if (d_candidate && d_preemptible && d_lower && (!pre_found || d_size < pre_size)) begin
                    pre_found <= 1'b1;
                    pre_size <= d_size;
                    pre_prr <= i[4:0];
                    pre_same <= d_same;
                end
                i <= i + 1'b1;
            end
            FORGET: if (done) begin
                len <= j;
                state <= IDLE;
            end else begin
                if (waiting[i][7:0] != wdata_q[7:0]) begin
                    waiting[j] <= waiting[i];
                    j <= j + 1'b1;
                end
                i <= i + 1'b1;
            end
            default: state <= IDLE;
        endcase
    end
endmodule

`default_nettype wire
