// Included in the body of a block whose port list is axi_lite_ports.vh:
// puts an axi_lite_port on those ports and declares the block's side of
// it, the command (cmd_*) it receives and the answer (done*) it gives.
    wire        cmd_valid, cmd_write;
    wire [14:0] cmd_addr;
    wire [31:0] cmd_wdata;
    reg         done;
    reg  [1:0]  done_resp;
    reg  [31:0] done_rdata;
    axi_lite_port port (
        .aclk(aclk), .aresetn(aresetn),
        .s_axi_awaddr(s_axi_awaddr), .s_axi_awvalid(s_axi_awvalid), .s_axi_awready(s_axi_awready),
        .s_axi_wdata(s_axi_wdata), .s_axi_wstrb(s_axi_wstrb), .s_axi_wvalid(s_axi_wvalid),
        .s_axi_wready(s_axi_wready), .s_axi_bresp(s_axi_bresp), .s_axi_bvalid(s_axi_bvalid),
        .s_axi_bready(s_axi_bready), .s_axi_araddr(s_axi_araddr), .s_axi_arvalid(s_axi_arvalid),
        .s_axi_arready(s_axi_arready), .s_axi_rdata(s_axi_rdata), .s_axi_rresp(s_axi_rresp),
        .s_axi_rvalid(s_axi_rvalid), .s_axi_rready(s_axi_rready),
        .cmd_valid(cmd_valid), .cmd_write(cmd_write), .cmd_addr(cmd_addr), .cmd_wdata(cmd_wdata),
        .done(done), .done_resp(done_resp), .done_rdata(done_rdata)
    );
