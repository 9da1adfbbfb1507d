// The knowledge-graph view: dashboard-internal JSON drawn with the vendored vis-network.
"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  const box = document.getElementById("graph");
  if (!box || typeof vis === "undefined") return;
  const response = await fetch(box.dataset.src, { credentials: "same-origin" });
  const data = await response.json();
  const nodes = new vis.DataSet(data.nodes.map((n) => ({
    id: n.id, label: n.name, value: n.mentions, color: n.color, group: n.community,
    title: `${n.name} (${n.type}): ${n.mentions} memories, community ${n.community}`,
  })));
  const edges = new vis.DataSet(data.edges.map((e, i) => ({
    id: i, from: e.source, to: e.target, value: e.weight,
    title: `${e.type}, weight ${e.weight}`,
  })));
  const network = new vis.Network(box, { nodes, edges }, {
    nodes: { shape: "dot", scaling: { min: 8, max: 36 }, font: { size: 14 } },
    edges: { color: { inherit: "from", opacity: 0.5 }, smooth: false },
    physics: { stabilization: { iterations: 300 } },
    interaction: { hover: true, tooltipDelay: 100 },
  });
  window.mnemonistGraph = network;
  // a click on an entity searches the memories that name it
  network.on("click", (event) => {
    if (!event.nodes || event.nodes.length === 0) return;
    const node = nodes.get(event.nodes[0]);
    location.assign(`/?q=${encodeURIComponent(node.label)}`);
  });
  network.once("stabilizationIterationsDone", () => network.setOptions({ physics: false }));
  // the number of nodes on the canvas, once it has been drawn (what the browser tests read)
  network.once("afterDrawing", () => {
    box.dataset.drawn = String(Object.keys(network.getPositions()).length);
  });
});
