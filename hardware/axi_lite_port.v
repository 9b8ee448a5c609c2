// The bus side both blocks share: it accepts one AXI4-Lite transaction at
// a time, hands it to the block as a command, and holds the block's answer
// on the bus until the master takes it.
//
// The command is valid in the cycle the transaction is accepted, with the
// bus's own address and data, so a block can start its RAM reads in that
// cycle instead of one later. A block answers with done, for one cycle,
// as early as that same cycle. Nothing is accepted from acceptance until
// the response is taken, so a block always has at least one idle cycle
// between two commands.

`default_nettype none

module axi_lite_port (
`include "axi_lite_ports.vh"
    ,
    output wire        cmd_valid,
    output wire        cmd_write,
    output wire [14:0] cmd_addr,
    output wire [31:0] cmd_wdata,
    input  wire        done,
    input  wire [1:0]  done_resp,
    input  wire [31:0] done_rdata
);
    reg busy;
    reg writing;
    reg [1:0] bresp, rresp;
    reg [31:0] rdata;
    reg bvalid, rvalid;

    // A write needs its address and data together; a read waits while a
    // write is offered.
    wire take_write = !busy && s_axi_awvalid && s_axi_wvalid;
    wire take_read = !busy && s_axi_arvalid && !take_write;
    assign s_axi_awready = take_write;
    assign s_axi_wready = take_write;
    assign s_axi_arready = take_read;
    assign cmd_valid = take_write || take_read;
    assign cmd_write = take_write;
    assign cmd_addr = take_write ? s_axi_awaddr : s_axi_araddr;
    assign cmd_wdata = s_axi_wdata;

    assign s_axi_bresp = bresp;
    assign s_axi_bvalid = bvalid;
    assign s_axi_rresp = rresp;
    assign s_axi_rdata = rdata;
    assign s_axi_rvalid = rvalid;

    wire answer_write = cmd_valid ? cmd_write : writing;

    always @(posedge aclk) begin
        if (!aresetn) begin
            {busy, writing, bvalid, rvalid} <= 4'b0;
            {bresp, rresp} <= 4'b0;
            rdata <= 32'd0;
        end else begin
            if (cmd_valid) begin
                busy <= 1'b1;
                writing <= cmd_write;
            end
            if (done && answer_write) begin
                bvalid <= 1'b1;
                bresp <= done_resp;
            end
            if (done && !answer_write) begin
                rvalid <= 1'b1;
                rresp <= done_resp;
                rdata <= done_rdata;
            end
            if ((bvalid && s_axi_bready) || (rvalid && s_axi_rready)) begin
                {bvalid, rvalid, busy} <= 3'b0;
            end
        end
    end
endmodule

`default_nettype wire
