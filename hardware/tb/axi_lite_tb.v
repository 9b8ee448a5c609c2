// Replays a vector file against one block through its AXI4-Lite slave
// and compares every response with what the Rust model answered.
//
// Each line of the file is five hex numbers:
//   op tag addr data expected
// op 0 reads addr and expects expected as RDATA; op 1 writes data to addr
// and expects expected as BRESP. tag only groups the cycle counts (one tag
// per kind of operation, chosen by the generator).
//
// Compile with -DDUT_PRR_MONITOR for the PRR monitor, else the ready
// queue; run with +vectors=FILE. It prints one MISMATCH line per wrong
// response, a CYCLES line per tag and a final DONE line.
//
// A transaction's cycles run from the first clock edge its valid is seen
// at to the edge its response is taken at, both counted: a slave that
// answers in the cycle after accepting takes 2.

`timescale 1ns / 1ps
`default_nettype none

module axi_lite_tb;
    parameter integer SLOTS = 64;
    parameter integer WAITING = 8;
    localparam integer TAGS = 16;

    reg aclk = 1'b0;
    reg aresetn = 1'b0;
    always #5 aclk = ~aclk;

    reg  [31:0] awaddr = 0, wdata = 0, araddr = 0;
    reg         awvalid = 0, wvalid = 0, arvalid = 0;
    wire        awready, wready, arready, bvalid, rvalid;
    wire [1:0]  bresp, rresp;
    wire [31:0] rdata;

`ifdef DUT_PRR_MONITOR
    prr_monitor #(.WAITING(WAITING)) dut (
`else
    ready_queue #(.SLOTS(SLOTS)) dut (
`endif
        .aclk(aclk), .aresetn(aresetn),
        .s_axi_awaddr(awaddr[14:0]), .s_axi_awvalid(awvalid), .s_axi_awready(awready),
        .s_axi_wdata(wdata), .s_axi_wstrb(4'hf), .s_axi_wvalid(wvalid), .s_axi_wready(wready),
        .s_axi_bresp(bresp), .s_axi_bvalid(bvalid), .s_axi_bready(1'b1),
        .s_axi_araddr(araddr[14:0]), .s_axi_arvalid(arvalid), .s_axi_arready(arready),
        .s_axi_rdata(rdata), .s_axi_rresp(rresp), .s_axi_rvalid(rvalid), .s_axi_rready(1'b1)
    );

    // Signals are sampled just after an edge, where they still hold the
    // values the edge saw, and driven with non-blocking assignments.
    task transact(input write, input [31:0] a, input [31:0] d, output [31:0] result, output integer cycles);
        begin
            awaddr <= a;
            araddr <= a;
            wdata <= d;
            awvalid <= write;
            wvalid <= write;
            arvalid <= !write;
            cycles = 1;
            @(posedge aclk);
            while (!(write ? awready && wready : arready)) begin
                @(posedge aclk);
                cycles = cycles + 1;
            end
            {awvalid, wvalid, arvalid} <= 3'b000;
            @(posedge aclk);
            cycles = cycles + 1;
            while (!(write ? bvalid : rvalid)) begin
                @(posedge aclk);
                cycles = cycles + 1;
            end
            result = write ? {30'd0, bresp} : rdata;
        end
    endtask

    integer fd, fields, line, mismatches, cycles, t;
    reg [31:0] op, tag, addr, data, wanted, got;
    reg [1023:0] path;
    integer count [0:TAGS-1];
    integer min_cycles [0:TAGS-1];
    integer max_cycles [0:TAGS-1];
    integer total_cycles [0:TAGS-1];

    initial begin
        if (!$value$plusargs("vectors=%s", path)) begin
            $display("ERROR no +vectors=FILE");
            $finish;
        end
        fd = $fopen(path, "r");
        if (fd == 0) begin
            $display("ERROR cannot open the vectors");
            $finish;
        end
        for (t = 0; t < TAGS; t = t + 1) begin
            count[t] = 0;
            min_cycles[t] = 0;
            max_cycles[t] = 0;
            total_cycles[t] = 0;
        end
        line = 0;
        mismatches = 0;
        repeat (3) @(posedge aclk);
        aresetn <= 1'b1;
        @(posedge aclk);
        fields = $fscanf(fd, "%h %h %h %h %h\n", op, tag, addr, data, wanted);
        while (fields == 5) begin
            line = line + 1;
            transact(op == 1, addr, data, got, cycles);
            if (got !== wanted) begin
                mismatches = mismatches + 1;
                $display("MISMATCH line=%0d op=%0d tag=%0d addr=%h data=%h expected=%h got=%h",
                         line, op, tag, addr, data, wanted, got);
            end
            t = tag % TAGS;
            if (count[t] == 0 || cycles < min_cycles[t]) min_cycles[t] = cycles;
            if (cycles > max_cycles[t]) max_cycles[t] = cycles;
            total_cycles[t] = total_cycles[t] + cycles;
            count[t] = count[t] + 1;
            fields = $fscanf(fd, "%h %h %h %h %h\n", op, tag, addr, data, wanted);
        end
        for (t = 0; t < TAGS; t = t + 1)
            if (count[t] > 0)
                $display("CYCLES tag=%0d count=%0d min=%0d max=%0d total=%0d",
                         t, count[t], min_cycles[t], max_cycles[t], total_cycles[t]);
        $display("DONE ops=%0d mismatches=%0d", line, mismatches);
        $finish;
    end
endmodule

`default_nettype wire
